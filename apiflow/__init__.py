"""apiflow: do LLM agents survive long, dependent REST-API workflows?"""

__version__ = "0.1.0"
