//! Shell completion that knows this data root: `stoat completions SHELL` prints a small
//! registration script, and the shell then asks the binary itself on every Tab
//! (`STOAT_COMPLETE=SHELL stoat -- WORDS...`, clap_complete's dynamic engine), so VM names
//! and image ids are completed as they are now, not as they were when the script was made
//! (the values themselves: candidates.rs).

use std::ffi::OsString;

use clap::CommandFactory;
use clap_complete::env::{Bash, CompleteEnv, EnvCompleter, Fish, Shells, Zsh};

use crate::grammar::{Cli, CompletionShell};

/// The variable that turns a run of `stoat` into a completion request.
const VAR: &str = "STOAT_COMPLETE";
/// The shells completion is offered for, each named as `completions` names it.
const SHELLS: Shells<'static> = Shells(&[&QuotingBash, &UNQUOTING_ZSH, &UNQUOTING_FISH]);
const UNQUOTING_ZSH: Unquoting = Unquoting(&Zsh);
const UNQUOTING_FISH: Unquoting = Unquoting(&Fish);

/// Answers a completion request and exits, when the shell made one; otherwise returns.
pub fn answer_if_asked() {
    CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .completer("stoat")
        .shells(SHELLS)
        .complete();
}

/// The registration script for `shell`: what `stoat completions SHELL` prints.
pub fn registration(shell: CompletionShell) -> String {
    let adapter: &dyn EnvCompleter = match shell {
        CompletionShell::Bash => &QuotingBash,
        CompletionShell::Zsh => &UNQUOTING_ZSH,
        CompletionShell::Fish => &UNQUOTING_FISH,
    };
    let mut script = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = adapter.write_registration(VAR, "stoat", "stoat", "stoat", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// clap_complete's bash adapter with a registration of our own: when a candidate is a file
/// here, readline quotes it as it quotes file names (`my\ notes.txt`, a `/` after a
/// directory); clap's own script inserts `my notes.txt` as two words.
struct QuotingBash;

const BASH_REGISTRATION: &str = r#"
_stoat_complete() {
    local IFS=$'\013'
    local words=("${COMP_WORDS[@]}")
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        words[COMP_CWORD]="$2"
    fi
    COMPREPLY=( $( \
        _CLAP_IFS="$IFS" \
        _CLAP_COMPLETE_INDEX="$COMP_CWORD" \
        _CLAP_COMPLETE_COMP_TYPE="$COMP_TYPE" \
        _CLAP_COMPLETE_SPACE=true \
        VAR=bash \
        stoat -- "${words[@]}" \
    ) )
    if [[ $? != 0 ]]; then
        unset COMPREPLY
        return
    fi
    compopt +o nospace 2> /dev/null
    local candidate
    for candidate in "${COMPREPLY[@]}"; do
        if [[ -e "$candidate" ]]; then
            compopt -o filenames 2> /dev/null
            break
        fi
    done
    if [[ "${COMPREPLY-}" =~ [=:]$ ]]; then
        compopt -o nospace 2> /dev/null
    fi
}
complete -o nospace -o bashdefault -F _stoat_complete stoat
"#;

impl EnvCompleter for QuotingBash {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn is(&self, name: &str) -> bool {
        name == "bash"
    }

    fn write_registration(
        &self,
        var: &str,
        _name: &str,
        _bin: &str,
        _completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        buf.write_all(BASH_REGISTRATION.replace("VAR", var).as_bytes())
    }

    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&std::path::Path>,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        Bash.write_complete(cmd, current_unquoted(args), current_dir, buf)
    }
}

/// clap_complete's zsh or fish adapter, with the word being completed unquoted first.
struct Unquoting(&'static dyn EnvCompleter);

impl EnvCompleter for Unquoting {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn is(&self, name: &str) -> bool {
        self.0.is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        self.0.write_registration(var, name, bin, completer, buf)
    }

    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&std::path::Path>,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        self.0
            .write_complete(cmd, current_unquoted(args), current_dir, buf)
    }
}

/// Every shell hands over the word being completed as typed (`my\ n`); the engine matches
/// candidates against what it means (`my n`). That word is the one `_CLAP_COMPLETE_INDEX`
/// names (bash, zsh), else the last (fish, whose earlier words arrive unquoted already).
fn current_unquoted(mut args: Vec<OsString>) -> Vec<OsString> {
    let index: Option<usize> = std::env::var("_CLAP_COMPLETE_INDEX")
        .ok()
        .and_then(|i| i.parse().ok())
        .or_else(|| args.len().checked_sub(1));
    if let Some(word) = index.and_then(|i| args.get_mut(i)) {
        *word = OsString::from(unquoted(&word.to_string_lossy()));
    }
    args
}

/// A partly typed shell word without its quoting: backslash escapes, and single or double
/// quotes, which may still be open. Nothing is expanded.
fn unquoted(typed: &str) -> String {
    let mut out = String::with_capacity(typed.len());
    let mut quote = None;
    let mut chars = typed.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') => out.extend(chars.next()),
            (None, '\'' | '"') => quote = Some(c),
            (Some('"'), '\\') => match chars.next() {
                Some(next @ ('"' | '\\' | '$' | '`')) => out.push(next),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            (Some(open), c) if c == open => quote = None,
            (_, c) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unquoted;

    #[test]
    fn a_typed_word_loses_its_quoting_only() {
        assert_eq!(unquoted(r"my\ n"), "my n");
        assert_eq!(unquoted("'my no"), "my no");
        assert_eq!(unquoted(r#""a \"b\" \x"#), r#"a "b" \x"#);
        assert_eq!(unquoted("$(rm -rf ~)"), "$(rm -rf ~)");
        assert_eq!(unquoted(""), "");
    }
}
