#!/bin/bash
# promtool check rules (syntax, PromQL) + promtool test rules (the alerts fire when they
# should and stay quiet when healthy). Exit 77 = skipped, with the reason.
# usage: check_rules.sh RULES_FILE RULES_TEST_FILE
set -euo pipefail
rules=$1
rules_test=$2

if ! command -v promtool >/dev/null; then
    echo "SKIP: promtool not found (Debian: apt-get install prometheus)"
    exit 77
fi
promtool check rules "$rules"

# The test file names its rule file relative to itself; run it in a scratch dir that
# holds both, so the check uses the repository's rules wherever the build lives.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$rules" "$scratch/linecap-rules.yml"
cp "$rules_test" "$scratch/linecap-rules.test.yml"
cd "$scratch"
promtool test rules linecap-rules.test.yml
