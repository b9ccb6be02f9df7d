"""Profiles: the typed, validated form of model, hardware (and later scenario) YAML."""
