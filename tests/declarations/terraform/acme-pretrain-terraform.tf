# examples/acme-pretrain.tf written the way a Terraform user would: locals, merge/lookup/format, a
# conditional, a for expression, count and outputs. It plans the very same cluster.
terraform {
  required_version = ">= 1.5"
  required_providers {
    velyrix = {
      source  = "velyrix/velyrix"
      version = "~> 0.1"
    }
  }
}

variable "environment" {
  type    = string
  default = "prod"
  validation {
    condition     = contains(["dev", "prod"], var.environment)
    error_message = "environment must be dev or prod."
  }
}

locals {
  nodes_by_env = { dev = 4, prod = 64 }
  common       = { fabric = "infiniband-ndr", scheduler = "slurm" }
  settings     = merge(local.common, { node_type = "hgx-h200-8g" })
  tiers_tb     = { parallel_fs = 800, object = 2000 }
  storage      = { for tier, tb in local.tiers_tb : "${tier}_tb" => tb }
  canary       = var.environment == "dev"
}

provider "velyrix" {
  region = "us-east-1"
}

resource "velyrix_cluster" "training" {
  name       = format("acme-%s", var.environment == "prod" ? "pretrain" : "dev")
  node_type  = local.settings.node_type
  node_count = lookup(local.nodes_by_env, var.environment, 8)
  fabric     = local.settings["fabric"]
  scheduler  = local.settings.scheduler
  storage {
    parallel_fs_tb = local.storage.parallel_fs_tb
    object_tb      = local.storage["object_tb"]
  }
}

# A one-node canary next to the dev cluster only (count = 0 in prod).
resource "velyrix_cluster" "canary" {
  count      = local.canary ? 1 : 0
  name       = "acme-canary-${count.index}"
  node_type  = local.settings.node_type
  node_count = 1
  fabric     = local.settings.fabric
  scheduler  = local.settings.scheduler
}

output "gpus" {
  description = "GPUs of the training cluster"
  value       = velyrix_cluster.training.node_count * 8
}

output "cluster_names" {
  value = concat([velyrix_cluster.training.name], velyrix_cluster.canary[*].name)
}
