"""FFN kinds, one module each; importing this package imports every module in it, and each
registers its class (so a new kind is one new file here)."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
