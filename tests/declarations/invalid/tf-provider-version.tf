# expect: line=3 message="does not satisfy"
terraform {
  required_providers {
    velyrix = {
      source  = "velyrix/velyrix"
      version = ">= 9.0"
    }
  }
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
