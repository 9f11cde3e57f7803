# The product page's 512-GPU pod training a 405B-parameter model (Llama 3 405B shape) that saves a
# checkpoint every 30 minutes. `velyrix plan examples/acme-405b.tf` says what the 800 TB performance
# tier delivers, how long each save blocks, whether that meets the targets below, and the cheapest
# change that would, with prices.
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
    object_tb      = 2000
  }

  workload {
    # Llama 3 405B architecture (arXiv 2407.21783, Table 3); 14 bytes per parameter by default.
    vocab    = 128256
    hidden   = 16384
    ffn      = 53248
    layers   = 126
    heads    = 128
    kv_heads = 8

    tp         = 8
    pp         = 16
    zero_stage = 1 # dp follows: 512 / (8 x 16) = 4

    checkpoint_interval_s   = 1800
    checkpoint_mode         = "sync"
    step_time_s             = 12
    max_checkpoint_overhead = 0.02 # a save may block at most 2% of the time
    goodput_target          = 0.99 # effective training time ratio (ETTR)

    keep_checkpoints   = 3
    promote_every      = 4 # every 2 hours to object storage
    archive_after_days = 14

    dataset_tb            = 60
    sample_mb             = 0.016 # 8,192 tokens x 2 bytes
    read_pattern          = "random"
    samples_per_s_per_gpu = 0.17 # 16M-token global batch / 512 GPUs / 12 s
  }
}
