//! Owns the vm.toml fixture writers: [`VmFixture`] (the earlier stoat's vm.toml keys, behaviour#data-root in
//! docs/contract.md) and a broken vm.toml.

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use crate::error::HarnessError;

use super::Sandbox;

/// One `[[forwards]]` table.
#[derive(Clone, Copy, Debug)]
pub struct Forward {
    pub host_port: u16,
    pub guest_port: u16,
}

/// A vm.toml to write. `None` fields are not written (an absent key).
#[derive(Clone, Debug)]
pub struct VmFixture {
    pub name: String,
    pub mode: String,
    pub os: String,
    pub iso: Option<String>,
    pub ram: u32,
    pub cpus: u32,
    pub disk: String,
    pub installed: bool,
    pub share: String,
    pub sshport: u16,
    pub recipes: Vec<String>,
    pub display: String,
    pub forwards: Vec<Forward>,
    pub backend: String,
    pub base: Option<String>,
    pub sshuser: String,
    /// `Some(..)` writes `console_password`; the sandbox's canary by default.
    pub console_password: Option<String>,
    /// `None` leaves the key out (read as true).
    pub allow_exec: Option<bool>,
}

impl VmFixture {
    /// A stopped live Alpine VM, like upstream's fixture `{work, live, ram 1024, cpus 1, sshport 2200}`.
    pub fn live(name: &str) -> Self {
        VmFixture {
            name: name.to_string(),
            mode: "live".into(),
            os: "alpine".into(),
            iso: Some("isos/alpine-virt-3.20.3-x86_64.iso".into()),
            ram: 1024,
            cpus: 1,
            disk: String::new(),
            installed: false,
            share: String::new(),
            sshport: 2200,
            recipes: Vec::new(),
            display: String::new(),
            forwards: Vec::new(),
            backend: "apkovl".into(),
            base: None,
            sshuser: "root".into(),
            console_password: None,
            allow_exec: None,
        }
    }

    /// A disk-mode VM with an 8G disk (its disk.qcow2 is written by [`Sandbox::write_vm`]).
    pub fn disk(name: &str) -> Self {
        VmFixture {
            mode: "disk".into(),
            disk: "8G".into(),
            ..VmFixture::live(name)
        }
    }

    pub fn sshport(mut self, port: u16) -> Self {
        self.sshport = port;
        self
    }

    pub fn password(mut self, password: &str) -> Self {
        self.console_password = Some(password.to_string());
        self
    }

    pub fn allow_exec(mut self, allow: Option<bool>) -> Self {
        self.allow_exec = allow;
        self
    }

    pub fn forward(mut self, host_port: u16, guest_port: u16) -> Self {
        self.forwards.push(Forward {
            host_port,
            guest_port,
        });
        self
    }

    /// Renders the TOML text.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let _ = writeln!(out, "name = {}", q(&self.name));
        let _ = writeln!(out, "mode = {}", q(&self.mode));
        let _ = writeln!(out, "os = {}", q(&self.os));
        if let Some(iso) = &self.iso {
            let _ = writeln!(out, "iso = {}", q(iso));
        }
        let _ = writeln!(out, "ram = {}", self.ram);
        let _ = writeln!(out, "cpus = {}", self.cpus);
        let _ = writeln!(out, "disk = {}", q(&self.disk));
        let _ = writeln!(out, "installed = {}", self.installed);
        let _ = writeln!(out, "share = {}", q(&self.share));
        let _ = writeln!(out, "sshport = {}", self.sshport);
        let recipes: Vec<String> = self.recipes.iter().map(|r| q(r)).collect();
        let _ = writeln!(out, "recipes = [{}]", recipes.join(", "));
        let _ = writeln!(out, "display = {}", q(&self.display));
        let _ = writeln!(out, "backend = {}", q(&self.backend));
        if let Some(base) = &self.base {
            let _ = writeln!(out, "base = {}", q(base));
        }
        let _ = writeln!(out, "sshuser = {}", q(&self.sshuser));
        if let Some(password) = &self.console_password {
            let _ = writeln!(out, "console_password = {}", q(password));
        }
        if let Some(allow) = self.allow_exec {
            let _ = writeln!(out, "allow_exec = {allow}");
        }
        for forward in &self.forwards {
            let _ = writeln!(
                out,
                "\n[[forwards]]\nhostport = {}\nguestport = {}",
                forward.host_port, forward.guest_port
            );
        }
        out
    }
}

impl Sandbox {
    /// Writes `<root>/<name>/vm.toml` (and an empty `disk.qcow2` for disk mode); returns the VM dir.
    ///
    /// A fixture without an explicit console password gets the sandbox's canary.
    pub fn write_vm(&self, fixture: &VmFixture) -> Result<PathBuf, HarnessError> {
        let mut fixture = fixture.clone();
        if fixture.console_password.is_none() {
            fixture.console_password = Some(self.console_password.clone());
        }
        let dir = self.vm_dir(&fixture.name);
        fs::create_dir_all(&dir).map_err(|e| HarnessError::io(&dir, e))?;
        let path = dir.join("vm.toml");
        fs::write(&path, fixture.to_toml()).map_err(|e| HarnessError::io(&path, e))?;
        if fixture.mode == "disk" {
            let disk = dir.join("disk.qcow2");
            fs::write(&disk, b"QFI\xfb fake qcow2 written by stoat-conformance\n")
                .map_err(|e| HarnessError::io(&disk, e))?;
        }
        Ok(dir)
    }

    /// Writes a vm.toml that will not parse (upstream's own broken fixture).
    pub fn write_broken_vm(&self, name: &str) -> Result<PathBuf, HarnessError> {
        let dir = self.vm_dir(name);
        fs::create_dir_all(&dir).map_err(|e| HarnessError::io(&dir, e))?;
        let path = dir.join("vm.toml");
        fs::write(&path, "name = \"x\"\nmode = \"disk\n")
            .map_err(|e| HarnessError::io(&path, e))?;
        Ok(dir)
    }

    /// Writes a file under the work dir (the SUT's cwd) and returns its path.
    /// Plants a bring-your-own image under the BYO canary directory; returns its path.
    pub fn write_byo_file(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, HarnessError> {
        let path = self.byo_dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| HarnessError::io(&path, e))?;
        Ok(path)
    }

    pub fn write_work_file(&self, relative: &str, bytes: &[u8]) -> Result<PathBuf, HarnessError> {
        let path = self.work.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| HarnessError::io(parent, e))?;
        }
        fs::write(&path, bytes).map_err(|e| HarnessError::io(&path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_toml_parses_with_upstream_keys() {
        let text = VmFixture::live("work")
            .password("pw")
            .forward(8080, 80)
            .allow_exec(Some(false))
            .to_toml();
        let value: toml::Value = toml::from_str(&text).expect("valid toml");
        for key in [
            "name",
            "mode",
            "os",
            "iso",
            "ram",
            "cpus",
            "disk",
            "installed",
            "share",
            "sshport",
            "recipes",
            "display",
            "backend",
            "sshuser",
            "console_password",
            "allow_exec",
            "forwards",
        ] {
            assert!(value.get(key).is_some(), "missing {key} in\n{text}");
        }
        assert_eq!(value["forwards"][0]["hostport"].as_integer(), Some(8080));
    }
}
