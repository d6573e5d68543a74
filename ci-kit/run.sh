#!/usr/bin/env bash
# The steps of the stoat-conformance GitHub Action (action.yml), runnable anywhere: get the
# suite (stoat-conformance and stoat-fake), run it against an implementer's stoat, write every
# report into one directory and the markdown summary into $GITHUB_STEP_SUMMARY.
#
# Inputs (environment):
#   STOAT_SUT             the implementation's executable (required)
#   STOAT_SUT_ARGS        fixed leading arguments for it (optional, split on spaces)
#   STOAT_PROFILE         its profile file (TOML, optional)
#   STOAT_BASELINE        its baseline of expected failures (TOML, optional)
#   STOAT_RUN_ARGS        more `run` options, e.g. "--tier pure --contract 3" (optional)
#   STOAT_REPORT_DIR      where the reports go (default: stoat-conformance-report)
#   STOAT_NAME            the implementation's name where the reports name one: `report
#                         --matrix --name` (its column in badge/matrix.*, its page badge/NAME.html;
#                         default: the report file's, conformance); the badge stays conformance.svg
#   How to get the suite, first that is set wins:
#   STOAT_SUITE_BIN_DIR   a directory that already holds both binaries
#   STOAT_SUITE_TARBALL   a tarball made by `make dist` (path or URL); the checksum file
#                         beside it (<tarball>.sha256) must match
#   STOAT_SUITE_SOURCE    this repository's checkout: `cargo install --locked --path` from it
#                         (default: the directory above this script)
#   STOAT_SUITE_ROOT      where a tarball is unpacked / cargo installs (default: a temp dir)
# Outputs: in $STOAT_REPORT_DIR: conformance.json, junit.xml, conformance.tap, report.html,
# summary.md, badge/conformance.svg, docs/contract.md (what report.html's spec ids link to); `exit-code=N`, `report-dir=...` and the counts
# (`passed=N`, `failed=N`, `crashed=N`, `warned=N`, `skipped=N`, `expected-failures=N`,
# `stale-baseline=N`, `errored=N`, `invocations=N`) appended to $GITHUB_OUTPUT when set.
# Built from source, the suite is reused when $STOAT_SUITE_ROOT already holds a build of the
# same sources (ci-kit/source-key.sh; the action caches that directory). Exits with the suite's own status (0 pass, 1 violations,
# 2 usage, 3 harness error); any failure of the kit itself exits 3 with a message.
set -euo pipefail

say() { printf 'stoat-conformance kit: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 3; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -n "${STOAT_SUT:-}" ] || die "STOAT_SUT (the implementation to judge) is not set"
sut="$STOAT_SUT"
[ -x "$sut" ] || sut="$(command -v "$sut" || true)"
[ -n "$sut" ] && [ -x "$sut" ] || die "STOAT_SUT=$STOAT_SUT is not an executable"
reports="${STOAT_REPORT_DIR:-stoat-conformance-report}"
mkdir -p "$reports"
root="${STOAT_SUITE_ROOT:-$(mktemp -d)}"

# 1. The suite.
if [ -n "${STOAT_SUITE_BIN_DIR:-}" ]; then
    bin="$STOAT_SUITE_BIN_DIR"
elif [ -n "${STOAT_SUITE_TARBALL:-}" ]; then
    tarball="$STOAT_SUITE_TARBALL"
    mkdir -p "$root"
    case "$tarball" in
        http://*|https://*)
            curl -fsSL -o "$root/suite.tar.gz" "$tarball" || die "cannot download $tarball"
            curl -fsSL -o "$root/suite.tar.gz.sha256" "$tarball.sha256" || die "cannot download $tarball.sha256"
            ;;
        *)
            cp "$tarball" "$root/suite.tar.gz" || die "no tarball at $tarball"
            cp "$tarball.sha256" "$root/suite.tar.gz.sha256" || die "no checksum file $tarball.sha256"
            ;;
    esac
    expected="$(cut -d' ' -f1 "$root/suite.tar.gz.sha256")"
    actual="$(sha256sum "$root/suite.tar.gz" | cut -d' ' -f1)"
    [ "$expected" = "$actual" ] || die "checksum mismatch for $tarball: expected $expected, got $actual"
    tar -xzf "$root/suite.tar.gz" -C "$root"
    bin="$(dirname "$(find "$root" -name stoat-conformance -type f | head -1)")"
else
    source_dir="${STOAT_SUITE_SOURCE:-$(cd "$here/.." && pwd)}"
    bin="$root/bin"
    key="$("$here/source-key.sh" "$source_dir")"
    # A suite already built from these very sources (a restored CI cache) is used as it is.
    if [ "$(cat "$root/.source-key" 2>/dev/null)" = "$key" ] && [ -x "$bin/stoat-conformance" ] && [ -x "$bin/stoat-fake" ]; then
        say "using the suite built before from these sources ($root)"
    else
        command -v cargo >/dev/null || die "cargo is needed to build the suite (or set STOAT_SUITE_TARBALL)"
        say "building the suite from $source_dir (cargo install)"
        cargo install --locked --quiet --force --path "$source_dir/conformance" --root "$root" --bins >&2
        printf '%s\n' "$key" > "$root/.source-key"
    fi
fi
[ -x "$bin/stoat-conformance" ] || die "no stoat-conformance in $bin"
[ -x "$bin/stoat-fake" ] || die "no stoat-fake in $bin"
suite="$bin/stoat-conformance"
say "$("$suite" --version) judging $sut"

# 2. The run. Options come first; the SUT and its fixed arguments after `--`.
args=(run --jobs "$(nproc 2>/dev/null || echo 2)" --fakes "$bin/stoat-fake"
    --json-report "$reports/conformance.json" --junit "$reports/junit.xml"
    --tap "$reports/conformance.tap" --html "$reports/report.html")
[ -n "${STOAT_PROFILE:-}" ] && args+=(--profile "$STOAT_PROFILE")
[ -n "${STOAT_BASELINE:-}" ] && args+=(--baseline "$STOAT_BASELINE")
# Both are split into words on blanks, never glob-expanded: `--id *` passes a `*`.
run_args=()
[ -n "${STOAT_RUN_ARGS:-}" ] && read -r -a run_args <<<"$STOAT_RUN_ARGS"
args+=("${run_args[@]}")
sut_args=()
[ -n "${STOAT_SUT_ARGS:-}" ] && read -r -a sut_args <<<"$STOAT_SUT_ARGS"
status=0
"$suite" "${args[@]}" -- "$sut" "${sut_args[@]}" || status=$?

# 3. The summaries, whatever the verdict (a harness error may leave no report).
if [ -f "$reports/conformance.json" ]; then
    # The restated contract report.html's spec ids link to (docs/contract.md, relative to
    # the page), from the suite that judged, so the links resolve in the uploaded artifact.
    for contract in "$bin/docs/contract.md" "${source_dir:-}/docs/contract.md" "$here/../docs/contract.md"; do
        if [ -f "$contract" ]; then
            mkdir -p "$reports/docs" && cp "$contract" "$reports/docs/contract.md"
            break
        fi
    done
    "$suite" report "$reports/conformance.json" --format md > "$reports/summary.md" || true
    # The kit owns badge/: a page or badge of an earlier run's name must not linger there.
    rm -rf "$reports/badge"
    names=()
    [ -n "${STOAT_NAME:-}" ] && names=(--name "$STOAT_NAME")
    "$suite" report --matrix "$reports/conformance.json" "${names[@]}" --out "$reports/badge" > /dev/null || true
    # One implementation, one badge, at the path the docs promise whatever its name.
    for svg in "$reports"/badge/*.svg; do
        if [ -f "$svg" ] && [ "$svg" != "$reports/badge/conformance.svg" ]; then
            mv -f "$svg" "$reports/badge/conformance.svg"
        fi
    done
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        cat "$reports/summary.md" >> "$GITHUB_STEP_SUMMARY"
    fi
else
    say "no report was written (exit $status)"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'exit-code=%s\nreport-dir=%s\n' "$status" "$reports" >> "$GITHUB_OUTPUT"
    # The counts (passed=N, failed=N, ...), when a report was written.
    if [ -f "$reports/conformance.json" ]; then
        "$suite" report "$reports/conformance.json" --format counts >> "$GITHUB_OUTPUT" || true
    fi
fi
say "exit $status; reports in $reports"
exit "$status"
