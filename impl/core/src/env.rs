//! The environment variables stoat reads, captured once so core never reads the process
//! environment behind its caller's back (tests pass their own).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every variable stoat reads, with what it does.
pub const VARS: &[(&str, &str)] = &[
    ("STOAT_HOME", "the data root; default $HOME/.stoat"),
    ("HOME", "the user's home: default data root, `~` expansion"),
    (
        "PATH",
        "where qemu, qemu-img, ssh, scp, ssh-keygen, xorriso and git are found",
    ),
    ("STOAT_ACCEL", "kvm (default) or tcg"),
    (
        "STOAT_COMPLETE",
        "set by the script of `stoat completions SHELL` when the shell asks for completions",
    ),
    (
        "STOAT_GRAPHICAL",
        "1 or 0: overrides graphical-session detection",
    ),
    ("DISPLAY", "an X11 session: VMs get a window"),
    ("WAYLAND_DISPLAY", "a Wayland session: VMs get a window"),
    ("XDG_RUNTIME_DIR", "where wayland-0 is looked for"),
    (
        "STOAT_CATALOG",
        "a TOML file that replaces the built-in image catalog",
    ),
    (
        "STOAT_PULL_STALL_SECS",
        "seconds without a byte before `pull` gives up (download_stalled); default 60",
    ),
    (
        "STOAT_LOCK_WAIT_SECS",
        "seconds a command waits for a lock another command holds (timeout); default 600",
    ),
    (
        "HTTP_PROXY",
        "proxy for http:// downloads (http_proxy wins when both are set)",
    ),
    (
        "HTTPS_PROXY",
        "proxy for https:// downloads, through CONNECT (https_proxy wins)",
    ),
    (
        "NO_PROXY",
        "hosts, domains, addresses or networks that skip the proxy (no_proxy wins)",
    ),
    (
        "STOAT_RECIPE_INDEX",
        "path or URL of the index `recipe search` reads",
    ),
    ("NO_COLOR", "no colour in human output"),
    (
        "STOAT_MCP_RATE",
        "`stoat mcp` per-tool rate bucket, capacity/refill_per_sec; default 30/0.5",
    ),
    (
        "STOAT_MCP_RATE_SHARED",
        "`stoat mcp` bucket shared by all tools, capacity/refill_per_sec; default 60/1",
    ),
];

/// A snapshot of the environment.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// Captures the process environment (the CLI does this once, at start).
    pub fn capture() -> Env {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// Returns an environment holding exactly `pairs` (for tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// Returns a variable's value when it is set and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Returns the user's home directory.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// Expands a leading `~` or `~/` against HOME; without a HOME such a path is refused
    /// (`invalid_spec`) rather than taken as a directory named `~`.
    pub fn expand_tilde(&self, path: &str) -> crate::Result<PathBuf> {
        let rest = match path.strip_prefix('~') {
            Some("") => "",
            Some(rest) if rest.starts_with('/') => &rest[1..],
            _ => return Ok(PathBuf::from(path)),
        };
        match self.home() {
            Some(home) => Ok(home.join(rest)),
            None => Err(crate::Error::InvalidSpec(format!(
                "path {path:?} starts with ~ but HOME is not set; give the full path"
            ))),
        }
    }

    /// The KVM device `up`, `doctor` and `capabilities` probe: `/dev/kvm`, or the one
    /// `STOAT_KVM_DEVICE` names (the only way to test `kvm_unusable` on a host whose /dev/kvm opens).
    pub fn kvm_device(&self) -> &Path {
        Path::new(
            self.get("STOAT_KVM_DEVICE")
                .unwrap_or(crate::qemu::accel::KVM_DEVICE),
        )
    }

    /// The CPU flags file: `/proc/cpuinfo`, or the one `STOAT_CPUINFO` names (tests, odd hosts).
    pub fn cpuinfo(&self) -> &Path {
        Path::new(self.get("STOAT_CPUINFO").unwrap_or("/proc/cpuinfo"))
    }

    /// Finds `tool` on PATH, or fails with `tool_missing` naming the Debian `package` that
    /// provides it: the one way core asks for a host program it cannot work without.
    pub fn require_tool(&self, tool: &str, package: &str) -> crate::Result<PathBuf> {
        self.which(tool).ok_or_else(|| crate::Error::Tool {
            tool: tool.into(),
            message: format!(
                "not found on PATH; install {package} (`stoat doctor` checks the host)"
            ),
        })
    }

    /// [`Env::require_tool`] for a program whose absence has a code of its own in the
    /// contract (`qemu_missing`, `git_required`): `missing` makes that error of the message.
    pub fn require_tool_as(
        &self,
        tool: &str,
        package: &str,
        missing: impl FnOnce(String) -> crate::Error,
    ) -> crate::Result<PathBuf> {
        self.which(tool).ok_or_else(|| {
            missing(format!(
                "{tool} not found on PATH; install {package} (`stoat doctor` checks the host)"
            ))
        })
    }

    /// Finds an executable on PATH.
    pub fn which(&self, tool: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.get("PATH")?;
        std::env::split_paths(path)
            .map(|dir| dir.join(tool))
            .find(|candidate| {
                candidate
                    .metadata()
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false)
            })
    }

    /// Returns the PATH value to give child processes.
    pub fn path_var(&self) -> &str {
        self.get("PATH").unwrap_or("")
    }
}
