# A cluster with a private link to AWS Direct Connect and a BYOIP BGP session (documentation ASN and
# prefixes, RFC 5398 and RFC 5737, stand in for the tenant's own; velyrix plan shows
# their prices; the twin delivers them as BIRD 2 configuration).
provider "velyrix" {
  region = "us-east-1"
}

variable "bgp_password" {
  type      = string
  sensitive = true
  default   = "change-me-0123"
}

resource "velyrix_cluster" "train" {
  name           = "acme-train"
  node_type      = "hgx-h200-8g"
  node_count     = 4
  fabric         = "infiniband-ndr"
  scheduler      = "slurm"
  operating_mode = "self_operated"
}

resource "velyrix_private_link" "aws" {
  cluster             = velyrix_cluster.train.name
  cloud               = "aws"
  location            = "EqDC2"
  port_speed_gbps     = 100
  vlan                = 101
  redundancy          = "dual"
  macsec              = true
  asn                 = 65010
  local_address       = "169.254.10.1/30"
  peer_address        = "169.254.10.2/30"
  auth                = "md5"
  md5_password        = var.bgp_password
  advertised_prefixes = ["10.40.0.0/16"]
  max_prefix          = 50
}

resource "velyrix_bgp_session" "byoip" {
  cluster       = velyrix_cluster.train.name
  asn           = 64500
  prefixes      = ["203.0.113.0/24"]
  local_address = "198.51.100.1/31"
  peer_address  = "198.51.100.0/31"
  max_prefix    = 4
  authorization {
    prefix     = "203.0.113.0/24"
    origin_asn = 64500
    max_length = 24
    reference  = "rpki:roa/arin/acme-2026-001"
  }
}
