"""The physical world: nodes and their hardware, the node lifecycle, and the drivers that act on nodes.

- ``states``: provisioning states and fleet stages (documented constants, no logic).
- ``transitions``: the one transition table and the one ``transition()`` every move goes through.
- ``hardware``: what a node is made of (GPUs, NICs, BMC, NVMe, firmware) and where it sits (rack, SU, leaf ports).
- ``acceptance``: delivery tests judged against the node type's figures (driver-independent).
- ``drivers.base``: the driver seam; ``drivers.sim``: the digital twin.
"""
