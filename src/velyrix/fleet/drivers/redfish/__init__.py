"""The real-hardware driver: BMCs over Redfish (``sushy``). ``RedfishDriver`` is the ``Driver`` seam;
``bmc`` holds one BMC's calls and the errors they end in."""

from velyrix.fleet.drivers.redfish.bmc import BmcEndpoint, BmcError, Secret
from velyrix.fleet.drivers.redfish.driver import RedfishDriver, RedfishSettings

__all__ = ["BmcEndpoint", "BmcError", "RedfishDriver", "RedfishSettings", "Secret"]
