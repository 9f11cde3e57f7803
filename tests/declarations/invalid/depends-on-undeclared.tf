# expect: line=8 message="undeclared resource velyrix_cluster.network"
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  depends_on = [velyrix_cluster.network]
}
