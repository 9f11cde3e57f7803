"""Velyrix: the software of a GPU cloud.

Plan a training cluster from an HCL declaration, provision it on a fleet (or on the digital twin),
validate it on delivery, and operate it.
"""

__version__ = "0.1.0"
