"""What users declare: HCL files parsed into typed, validated ``ClusterSpec`` models.

``velyrix.declarations.loader.load(path, variables, var_files)`` is the entry point.
"""
