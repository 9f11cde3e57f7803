"""One bad node never stops the others: an operator registers (POST /v1/nodes) a hostname the twin does
not know; intake puts that node in an error state the operator sees, the rest of the fleet is taken in,
new clusters still become Ready, and starting the runtime again (``velyrix up``) works."""

from __future__ import annotations

from tests.reconcile.world import World
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases
from velyrix.fleet import states


def _register_unknown(world: World, name: str = "ghost-001") -> None:
    with world.sessionmaker() as s:  # what POST /v1/nodes stores
        s.add(models.Node(name=name, region="us-east-1", node_type="hgx-h200-8g", hardware={}, labels={}))
        s.commit()


def test_a_node_the_driver_does_not_know_fails_alone(world: World) -> None:
    _register_unknown(world)
    assert world.runtime.reconciler.intake() == 0  # raised UnknownNameError before
    (ghost,) = world.nodes(name="ghost-001")
    assert ghost.provisioning_state == states.FAILED
    assert ghost.last_error and "ghost-001" in ghost.last_error and "driver" in ghost.last_error
    cid = world.declare("after-ghost", 32)
    world.settle()
    assert world.cluster(cid).phase == phases.READY


def test_the_runtime_starts_with_a_bad_node_registered(world: World) -> None:
    _register_unknown(world, "ghost-002")
    world.runtime.enroll()  # what `velyrix up` runs first; it refused to start before
    world.runtime.start()
    world.runtime.stop()
    (ghost,) = world.nodes(name="ghost-002")
    assert ghost.provisioning_state == states.FAILED
