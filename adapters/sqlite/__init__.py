"""The one-machine adapters over SQLite."""
