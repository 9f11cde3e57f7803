# A small inference-and-fine-tuning cluster: 4 HGX H100 nodes on Spectrum-X Ethernet, Kubernetes.
# Variables work as in Terraform: override with -var node_count=8 or a -var-file.

variable "node_count" {
  type        = number
  default     = 4
  description = "How many 8-GPU nodes"
}

variable "team" {
  type    = string
  default = "research"
}

provider "velyrix" {
  region = "us-east-1"
}

resource "velyrix_cluster" "finetune" {
  name       = "${var.team}-finetune"
  node_type  = "hgx-h100-8g"
  node_count = var.node_count
  fabric     = "spectrum-x"
  scheduler  = "kubernetes"

  storage {
    parallel_fs_tb = 100
    block_tb       = 20
    object_tb      = 250
    archive_tb     = 500
  }

  acceptance {
    all_reduce = true
    storage    = false # scratch-only tests for this one
  }
}
