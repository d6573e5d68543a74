//! Owns the fake `ssh-keygen`: writes `-f <path>` and `<path>.pub` (no passphrase, no prompt).

use super::script::{FakeCall, FakeScript};
use super::{log, ssh};

pub fn run(args: &[String]) -> i32 {
    let script = FakeScript::load();
    log::append(&FakeCall {
        tool: "ssh-keygen".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    if let Some(rule) = script.find("ssh-keygen", args) {
        if rule.exit.unwrap_or(0) != 0 {
            return ssh::answer(rule);
        }
    }
    let comment = value_after(args, "-C").unwrap_or("stoat");
    let Some(path) = value_after(args, "-f") else {
        eprintln!("stoat-fake ssh-keygen: only -f <path> is supported");
        return 1;
    };
    let private = "-----BEGIN OPENSSH PRIVATE KEY-----\nc3RvYXQtZmFrZS1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n";
    let public = format!(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHN0b2F0LWZha2Uta2V5LWZvci10ZXN0cw {comment}\n"
    );
    if std::fs::write(path, private).is_err()
        || std::fs::write(format!("{path}.pub"), public).is_err()
    {
        eprintln!("stoat-fake ssh-keygen: cannot write {path}");
        return 1;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    0
}

pub(crate) fn value_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
