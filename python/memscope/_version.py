# The wheel build (python/build_wheels.py) replaces this file with the
# wheel's version; a source checkout has none.
__version__ = "0.0.0+source"
