"""airflow-provider-delta: Delta Lake tables as first-class citizens in Apache Airflow."""
__version__ = "0.1.0"
