"""The twin's driver: idempotent by request id, asynchronous with delays, acceptance that bad parts fail."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.fleet import acceptance, hardware
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim import Fault, SimClock, SimDelays, SimDriver, SimRegion

NODE = "use1-h200-su00-n00"


def test_inspect_returns_the_inventory(driver: SimDriver) -> None:
    op = driver.inspect(NODE, request_id="i1")
    hw = base.parse_hardware(op)
    assert op.status == base.SUCCEEDED and hw.hostname == NODE and len(hw.gpus) == 8
    assert len([n for n in hw.nics if n.role == "compute"]) == 8 and hw.position and hw.position.su == 0
    assert hardware.NodeHardware.from_dict(hw.to_dict()) == hw


def test_requests_are_idempotent_by_request_id(driver: SimDriver) -> None:
    a = driver.provision(NODE, image="ubuntu-22.04-cuda12", firmware={"bios": "1.6.2"}, request_id="p1")
    b = driver.provision(NODE, image="other", firmware={}, request_id="p1")
    assert a is b and driver.calls == 1 and driver.region.node(NODE).image == "ubuntu-22.04-cuda12"


def test_operations_finish_after_their_delay() -> None:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=1, clock=SimClock())
    drv = SimDriver(region, SimDelays(provision_s=600.0))
    op = drv.provision("use1-h200-su00-n01", image="img", firmware={}, request_id="p")
    assert op.status == base.PENDING and region.node("use1-h200-su00-n01").image is None
    region.advance(599)
    assert drv.operation("p").status == base.PENDING
    region.advance(1)
    assert drv.operation("p").status == base.SUCCEEDED and drv.operation("p").finished_at_s == 600.0


def test_unknown_operation_is_not_found(driver: SimDriver) -> None:
    with pytest.raises(errors.NotFoundError):
        driver.operation("never-submitted")


def test_fail_next_makes_one_request_fail(driver: SimDriver) -> None:
    driver.fail_next("provision", NODE, "PXE timeout", retryable=True)
    op = driver.provision(NODE, image="img", firmware={}, request_id="x1")
    assert op.status == base.FAILED and op.error == "PXE timeout" and op.retryable
    assert driver.provision(NODE, image="img", firmware={}, request_id="x2").status == base.SUCCEEDED


def test_networks_storage_and_sanitize(driver: SimDriver) -> None:
    driver.attach_networks(NODE, base.NetworkAttachment(vlan=1001, vrf="t-acme", pkey=0x8001 & 0x7FFF), request_id="n1")
    assert driver.region.node(NODE).networks == {"vlan": 1001, "vrf": "t-acme", "pkey": 1}
    bad = driver.attach_networks(NODE, base.NetworkAttachment(vlan=1, vrf="v", pkey=0x7FFF), request_id="n2")
    assert bad.status == base.FAILED and "0x7fff" in (bad.error or "")
    driver.attach_storage(NODE, [base.VolumeAttachment("vol-1", "parallel_fs", "/mnt/pfs", 800.0)], request_id="s1")
    assert driver.region.node(NODE).mounts == ["vol-1"]
    driver.provision(NODE, image="img", firmware={}, request_id="p")
    op = driver.sanitize(NODE, request_id="z1")
    node = driver.region.node(NODE)
    assert op.result["certificate"].startswith("nist-800-88")
    assert (node.image, node.networks, node.mounts, node.tenant_data) == (None, None, [], False)


def test_healthy_node_passes_acceptance(driver: SimDriver) -> None:
    results = acceptance.judge_node("hgx-h200-8g", driver.run_acceptance(NODE, request_id="a").result)
    assert acceptance.passed(results), acceptance.failures(results)
    assert {r.test for r in results} == set(acceptance.NODE_TESTS) - {"roce_ports"}  # its ports run InfiniBand


@pytest.mark.parametrize(
    "fault,test",
    [
        (Fault("slow_gpu", gpu=3), "gpu_burn_in"),
        (Fault("xid", gpu=1, xid=79), "gpu_burn_in"),
        (Fault("ecc_dbe", gpu=2), "gpu_burn_in"),
        (Fault("nvlink", gpu=5), "nvlink"),
        (Fault("ib_down", port=4), "ib_ports"),
        (Fault("slow_disk", drive=0, factor=0.1), "local_nvme"),
        (Fault("thermal", gpu=6), "gpu_burn_in"),
    ],
)
def test_bad_part_fails_its_acceptance_test(driver: SimDriver, fault: Fault, test: str) -> None:
    driver.region.inject(NODE, fault)
    results = acceptance.judge_node("hgx-h200-8g", driver.run_acceptance(NODE, request_id="a").result)
    assert not acceptance.passed(results)
    assert test in {r.test for r in results if not r.passed}


def test_cluster_tests_measure_all_reduce_and_storage(driver: SimDriver) -> None:
    nodes = list(driver.region.nodes)[:16]
    vol = base.VolumeAttachment("vol-pfs", "parallel_fs", "/mnt/pfs", 800.0)
    for n in nodes:
        driver.attach_storage(n, [vol], request_id=f"s/{n}")
    m = driver.run_cluster_tests(nodes, request_id="c1", volumes=[vol]).result
    results = acceptance.judge_cluster(
        "hgx-h200-8g", m, expected_write_gb_s=0.6 * 800 * 0.8, expected_read_gb_s=min(1.5 * 800, 16 * 50) * 0.8
    )  # 16 clients x 50 GB/s cap
    assert acceptance.passed(results), acceptance.failures(results)
    driver.region.inject(nodes[3], Fault("ib_down", port=0))
    slow = driver.run_cluster_tests(nodes, request_id="c2").result
    assert not acceptance.passed(acceptance.judge_cluster("hgx-h200-8g", slow, tests=("all_reduce",)))
