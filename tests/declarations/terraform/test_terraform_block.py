"""``terraform {}``: required_providers source and version checked, backends refused, unknown
arguments named; unsupported constructs (module, data, other providers) refused with file:line."""

from __future__ import annotations

from tests.declarations.terraform.helpers import cluster, load, problems


def block(inner: str) -> str:
    return f"terraform {{\n{inner}\n}}\n" + cluster()


def test_velyrix_provider_requirement_is_accepted_when_the_version_matches() -> None:
    ok = 'required_providers {\n  velyrix = {\n    source = "velyrix/velyrix"\n    version = "~> 0.1"\n  }\n}'
    assert load(block('  required_version = ">= 1.5.0"\n' + ok)).clusters
    out = problems(block(ok.replace("~> 0.1", ">= 2.0")))
    assert "does not satisfy '>= 2.0'" in out[0] and "main.tf:4:3" in out[0]


def test_other_providers_and_bad_constraints_are_errors() -> None:
    out = problems(block('required_providers {\n  aws = {\n    source = "hashicorp/aws"\n  }\n}'))
    assert "provider 'aws' (source 'hashicorp/aws') is not supported" in out[0]
    out = problems(block('required_providers {\n  velyrix = {\n    version = "about one"\n  }\n}'))
    assert "is not a version constraint" in out[0]
    assert "required_version is not a version constraint" in problems(block('  required_version = "new"'))[0]


def test_backend_is_a_clear_error_not_silence() -> None:
    out = problems(block('  backend "s3" {\n    bucket = "x"\n  }'))
    assert out == [
        'main.tf:3:3: backend "s3" is not implemented: Velyrix keeps the state on its control plane '
        "(expected no backend block (velyrix login points plan and apply at the control plane))"
    ]
    assert "cloud is not implemented" in problems(block("  cloud {\n  }"))[0]


def test_unknown_terraform_argument_names_the_closest() -> None:
    out = problems(block('  required_versoin = "1.0"'))
    assert "unknown argument 'required_versoin' in terraform" in out[0] and "required_version" in out[0]


def test_module_data_and_foreign_resources_are_refused_with_position() -> None:
    out = problems(cluster() + 'module "net" {\n  source = "./net"\n}\n')
    assert out[0].startswith("main.tf:10:1: module block: modules are not supported")
    out = problems(cluster() + 'data "velyrix_region" "r" {\n}\n')
    assert out[0].startswith("main.tf:10:1: data block: data sources are not supported")
    out = problems(cluster() + 'resource "aws_instance" "x" {\n}\n')
    assert "resource type 'aws_instance' belongs to provider 'aws'" in out[0] and out[0].startswith("main.tf:10:1")
    out = problems(cluster(node_count="data.velyrix_region.r.capacity"))
    assert "data sources are not supported" in out[0]
