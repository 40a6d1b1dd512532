"""scenegen: language-driven generative scene synthesis for robot learning."""

__version__ = "0.1.0"

__all__ = ["__version__"]
