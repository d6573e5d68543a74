//! Owns `golden/cases.toml`: the list of cases `golden record` records, each naming its argv
//! and how to build its fixture with the sandbox's own writers (VMs, broken VMs, files), plus
//! the expectation rules the recorder applies (`loose`, `grow`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::HarnessError;
use crate::sandbox::VmFixture;

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseList {
    #[serde(default, rename = "case")]
    pub cases: Vec<CaseSpec>,
}

/// One `[[case]]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// The `cmd` (the directory under golden/).
    pub cmd: String,
    /// The file name without `.json`.
    pub name: String,
    #[serde(default)]
    pub about: String,
    pub argv: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub stdin: Option<String>,
    /// Fixture VMs written with the sandbox's `VmFixture`.
    #[serde(default)]
    pub vms: Vec<VmSpec>,
    /// VM names whose vm.toml does not parse.
    #[serde(default)]
    pub broken: Vec<String>,
    /// Extra data-root files: relative path → text.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Work-directory files: relative path → text.
    #[serde(default)]
    pub work: BTreeMap<String, String>,
    #[serde(default)]
    pub running: Vec<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Skip the pre-seeded ssh keys.
    #[serde(default)]
    pub no_keys: bool,
    /// Pointers (`*` = any segment) whose subtree is host-dependent: recorded as shapes.
    #[serde(default)]
    pub loose: Vec<String>,
    /// Pointers of lists that may grow: recorded as `{"$includes": [...]}`.
    #[serde(default)]
    pub grow: Vec<String>,
    /// The case pins a choice of the reference that the contract leaves open: it is
    /// recorded under `reference/` and verified only with `verify --reference`.
    #[serde(default)]
    pub reference: bool,
}

/// One fixture VM.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSpec {
    pub name: String,
    /// `live` (default) or `disk`.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub sshport: Option<u16>,
    /// `[host, guest]` pairs.
    #[serde(default)]
    pub forwards: Vec<[u16; 2]>,
    #[serde(default)]
    pub allow_exec: Option<bool>,
    #[serde(default)]
    pub installed: Option<bool>,
    #[serde(default)]
    pub recipes: Vec<String>,
    #[serde(default)]
    pub share: Option<String>,
    #[serde(default)]
    pub ram: Option<u32>,
    #[serde(default)]
    pub cpus: Option<u32>,
}

impl VmSpec {
    /// The sandbox fixture this spec describes.
    pub fn fixture(&self) -> VmFixture {
        let mut fixture = match self.mode.as_deref() {
            Some("disk") => VmFixture::disk(&self.name),
            _ => VmFixture::live(&self.name),
        };
        if let Some(port) = self.sshport {
            fixture = fixture.sshport(port);
        }
        for [host, guest] in &self.forwards {
            fixture = fixture.forward(*host, *guest);
        }
        fixture = fixture.allow_exec(self.allow_exec);
        if let Some(installed) = self.installed {
            fixture.installed = installed;
        }
        fixture.recipes = self.recipes.clone();
        if let Some(share) = &self.share {
            fixture.share = share.clone();
        }
        if let Some(ram) = self.ram {
            fixture.ram = ram;
        }
        if let Some(cpus) = self.cpus {
            fixture.cpus = cpus;
        }
        fixture
    }
}

impl CaseList {
    pub fn load(path: &Path) -> Result<Self, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
        toml::from_str(&text).map_err(|e| HarnessError::BadInput {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}
