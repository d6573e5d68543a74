//! Owns what a check of both editions cites when a run judges contract 2: the same section
//! of the contract-2 text (`json-v3#x` becomes `json-v2#x`), and, where the contract-2 text
//! words the rule differently, its own sentence. A lint test finds every one verbatim in the
//! contract-2 text, so an edition-2 finding always points at edition-2 words.

use super::def::CheckDef;
use crate::spec::{Edition, Editions, Source};

/// (check id, contract-2 section, contract-2 sentence) where contract 2 words the rule
/// differently from the contract-3 sentence the catalog quotes.
const WORDED_DIFFERENTLY: &[(&str, &str, &str)] = &[
    ("ENV.cmd-matches", "json-v2#per-command-data", "Both recipe subcommands report \"cmd\":\"recipe\", not \"cmd\":\"recipe list\"."),
    ("ENV.cmd-consistent", "json-v2#streaming", "{\"v\":2,\"type\":\"stage\",\"cmd\":\"apply\",\"data\":{\"recipe\":\"xfce\"}}"),
    ("EXEC.base64-valid", "json-v2#exec-bytes", "So when a stream is not valid UTF-8 it is carried as base64 instead:"),
    ("EXEC.base64-only-non-utf8", "json-v2#exec-bytes", "So when a stream is not valid UTF-8 it is carried as base64 instead:"),
    ("EXEC.base64-stdout", "json-v2#exec-bytes", "So when a stream is not valid UTF-8 it is carried as base64 instead:"),
    ("EXEC.generated-bytes", "json-v2#exec-bytes", "So when a stream is not valid UTF-8 it is carried as base64 instead:"),
    ("SMOKE.version", "json-v2#per-command-data", "version {\"version\":\"1.2.3\",\"contract\":1}"),
    ("GET.display-vnc-headless", "json-v2#types", "so on a host with no session an uninstalled disk VM gets \"vnc\" too"),
    ("GET.display-window-graphical", "json-v2#types", "STOAT_GRAPHICAL=0/=1 in stoat's environment overrides it."),
    ("FORWARD.show", "json-v2#per-command-data", "A forward that only shows reports active without applies_at, since it changed nothing to apply."),
    ("FORWARD.set-stopped", "json-v2#per-command-data", "applies_at is now or next_start, and appears on update and on a forward that CHANGED something."),
    ("FORWARD.set-running", "json-v2#per-command-data", "a forward saved on a running VM is not live yet"),
    ("DOCTOR.healthy-consistent", "json-v2#per-command-data", "doctor {\"healthy\":false,\"checks\":[Check,...]}"),
    ("CHECKRECIPES.applicable-explicit", "json-v2#per-command-data", "check-recipes.applicable is emitted explicitly even though it equals issues == []"),
    ("RECIPE.new-path", "json-v2#per-command-data", "recipe new {\"path\":\"/home/u/.stoat/recipes/foo.alpine.sh\"}"),
    ("UP.starts", "json-v2#per-command-data", "up {\"vm\":VM} (re-read after start, so state is authoritative)"),
    ("REAL.lifecycle", "json-v2#per-command-data", "up {\"vm\":VM} (re-read after start, so state is authoritative)"),
    ("DOWN.stops", "json-v2#per-command-data", "down {\"vm\":VM}"),
    ("APPLY.log-per-line", "json-v2#streaming", "apply and provision wrap each appended line of the recipe log as a log event"),
    ("APPLY.streams-stage-log", "json-v2#streaming", "apply and provision wrap each appended line of the recipe log as a log event, and emit a stage event at each recipe boundary:"),
    ("APPLY.nothing-to-run", "json-v2#types", "Every list-valued field is [] when empty, never null."),
    ("PULL.progress-bytes", "json-v2#streaming", "{\"v\":2,\"type\":\"progress\",\"cmd\":\"pull\",\"data\":{\"id\":\"alpine-virt\",\"done\":62914560,\"total\":62914560,\"percent\":100}}"),
];

impl CheckDef {
    /// The section and sentence this check cites when a run judges `edition`.
    pub fn citation(&self, edition: Edition) -> (&'static str, &'static str) {
        if edition != Edition::V2
            || self.editions != Editions::Both
            || self.source == Source::Design
        {
            return (self.spec, self.quote);
        }
        if let Some((_, section, quote)) =
            WORDED_DIFFERENTLY.iter().find(|(id, _, _)| *id == self.id)
        {
            return (section, quote);
        }
        let section = crate::spec::SECTIONS
            .iter()
            .map(|(anchor, _)| *anchor)
            .find(|anchor| anchor.strip_prefix("json-v2#") == self.spec.strip_prefix("json-v3#"))
            .unwrap_or(self.spec);
        (section, self.quote)
    }

    /// The section a finding of this check cites when a run judges `edition`.
    pub fn spec_in(&self, edition: Edition) -> &'static str {
        self.citation(edition).0
    }
}
