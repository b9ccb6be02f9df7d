"""The resolved deployment (``model``), how a scenario file becomes it (``resolve``), and the
prices and measurement bases that resolution uses."""
