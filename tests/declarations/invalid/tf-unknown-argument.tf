# expect: line=2 message="unknown argument 'required_versions' in terraform"
terraform {
  required_versions = ">= 1.0"
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
