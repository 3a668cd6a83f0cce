"""One module per log format; each follows :mod:`mfu_toolkit.io.base` and imports no other format.

Import a format to see what it accepts: ``from mfu_toolkit.io.formats import megatron;
help(megatron.Options)``. :data:`mfu_toolkit.io.FORMATS` lists them in detection order.
"""
