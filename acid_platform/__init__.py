"""acid_platform: Hive ACID v2 transactional tables for data lakes, in Python."""

__version__ = "0.1.0"
