# expect: line=8 message="needs one label, for_each and one content block"
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  dynamic "storage" {
    for_each = [1]
  }
}
