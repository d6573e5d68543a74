//! The cloudinit backend (mode cloud): the qcow2 overlay on the base image, its resize to
//! `disk`, and the NoCloud seed ISO (user `stoat` with stoat's key, sudo, 9p mounts, the
//! console password when set). docs/contract.md behaviour#qemu.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::vm::StoredVm;
use crate::{keys, Env, Error, Result, Root};

/// A clone boots a copy of its source's disk under a new instance-id (`stoat-<name>`), and
/// must not keep the source's machine-id (DHCP leases, journald and D-Bus key on it). Every
/// boot (bootcmd) compares the instance the machine-id was made for, recorded on the disk,
/// with cloud-init's current one; on a change it makes a new machine-id. The first boot ever
/// only records it (systemd has just filled the image's empty machine-id). cloud-init's own
/// previous-instance-id cannot tell: its second stage rewrites it to the current id.
const NEW_MACHINE_ID: &str = "f=/var/lib/stoat/machine-id.instance; now=$(cat /var/lib/cloud/data/instance-id 2>/dev/null); [ -n \"$now\" ] || exit 0; if [ -f $f ] && [ \"$(cat $f)\" != \"$now\" ]; then rm -f /etc/machine-id; [ -L /var/lib/dbus/machine-id ] || rm -f /var/lib/dbus/machine-id; systemd-machine-id-setup; fi; mkdir -p /var/lib/stoat && echo \"$now\" > $f";

/// Password logins over ssh are off (`ssh_pwauth: false`: a console password must not open
/// the forwarded port to anyone on the host). cloud-init's set-passwords module applies that
/// late, after sshd has started and taken stoat's first login, and restarts sshd when it had
/// to change the setting: every new connection in that window is reset, a pasted
/// `ssh-command` among them. So this early boot step (bootcmd runs before sshd starts) writes
/// the setting where that module looks (the `sshd_config.d/50-cloud-init.conf` drop-in when
/// sshd_config includes the folder, else sshd_config itself): sshd starts with it, and the
/// module finds nothing to change and restarts nothing. A setting already there is left to
/// the module; a guest without OpenSSH (dropbear) has no sshd_config and is left alone.
const NO_PASSWORD_SSH: &str = "c=/etc/ssh/sshd_config; [ -f $c ] || exit 0; f=$c; if grep -q \"^Include $c.d/\\*.conf\" $c; then mkdir -p $c.d; f=$c.d/50-cloud-init.conf; [ -f $f ] || (umask 077; : > $f); fi; grep -qi '^[[:space:]]*PasswordAuthentication[[:space:]]' $f || echo 'PasswordAuthentication no' >> $f";

/// What cloud-init merges documents with (upstream's value).
const MERGE_HOW: &str = "list(append)+dict(recurse_list)";

/// Prepares a cloud VM's disk and seed; returns (disk, seed ISO). The disk is made only on
/// first start; the seed whenever it is missing (a crash between the two must not strand it).
pub fn prepare(root: &Root, env: &Env, stored: &StoredVm) -> Result<(PathBuf, PathBuf)> {
    let disk = stored.files().disk();
    let seed_iso = stored.files().seed_iso();
    let first_start = !disk.exists();
    if !first_start && seed_iso.exists() {
        return Ok((disk, seed_iso));
    }
    // Check every tool before making anything, so a missing one leaves nothing behind.
    let xorriso = env.require_tool("xorriso", "xorriso")?;
    let key = keys::ensure(root, env)?;
    let pubkey = std::fs::read_to_string(key.with_extension("pub"))
        .map_err(|e| Error::io("read the stoat public key", e))?;
    if first_start {
        make_disk(env, stored, &disk)?;
    }
    let recipes = crate::recipes::seed::cloud_config(root, stored)?;
    write_seed(env, &xorriso, stored, pubkey.trim(), recipes, &seed_iso)?;
    Ok((disk, seed_iso))
}

/// `qemu-img create -f qcow2 -b <base> -F qcow2`, then resize, into a temporary name that is
/// renamed into place: a failure never leaves a half-made disk that would skip this next time.
fn make_disk(env: &Env, stored: &StoredVm, disk: &Path) -> Result<()> {
    let base = Path::new(&stored.config.base);
    if !base.is_absolute() || !base.is_file() {
        return Err(Error::InvalidSpec(format!(
            "{}: base image {:?} is not an existing absolute file",
            stored.name, stored.config.base
        )));
    }
    let qemu_img = env.require_tool("qemu-img", "qemu-utils")?;
    let partial = stored.files().disk_partial();
    let _ = std::fs::remove_file(&partial);
    let made = run_tool(
        env,
        "qemu-img",
        Command::new(&qemu_img)
            .args(["create", "-q", "-f", "qcow2", "-b"])
            .arg(base)
            .args(["-F", "qcow2"])
            .arg(&partial),
    )
    .and_then(|()| {
        if stored.config.disk.is_empty() {
            return Ok(());
        }
        run_tool(
            env,
            "qemu-img",
            Command::new(&qemu_img)
                .args(["resize", "-q"])
                .arg(&partial)
                .arg(&stored.config.disk),
        )
    })
    .and_then(|()| crate::root::make_private(&partial))
    .and_then(|()| {
        std::fs::rename(&partial, disk)
            .map_err(|e| Error::io(format!("rename {}", disk.display()), e))
    });
    if made.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    made
}

/// Writes `<vm>/ovl/seed/{user-data,meta-data}` and packs them into the CIDATA ISO.
fn write_seed(
    env: &Env,
    xorriso: &Path,
    stored: &StoredVm,
    pubkey: &str,
    recipes: Option<String>,
    iso: &Path,
) -> Result<()> {
    let seed_dir = stored.files().seed_dir();
    std::fs::create_dir_all(&seed_dir).map_err(|e| Error::io("create the seed directory", e))?;
    for dir in [&seed_dir, &stored.files().overlay_dir()] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io("make the seed directory owner-only", e))?;
    }
    let user_data = user_data_with(stored, pubkey, recipes);
    write_private(&seed_dir.join("user-data"), user_data.as_bytes())?;
    let meta = format!(
        "instance-id: {}\nlocal-hostname: {}\n",
        quote(&format!("stoat-{}", stored.name)),
        quote(&stored.name)
    );
    write_private(&seed_dir.join("meta-data"), meta.as_bytes())?;
    let _ = std::fs::remove_file(iso);
    run_tool(
        env,
        "xorriso",
        Command::new(xorriso)
            .args(["-as", "mkisofs", "-o"])
            .arg(iso)
            .args(["-V", "CIDATA", "-J", "-r"])
            .arg(&seed_dir),
    )?;
    if !iso.is_file() {
        return Err(Error::Tool {
            tool: "xorriso".into(),
            message: format!("made no seed ISO at {}", iso.display()),
        });
    }
    // The seed holds the console password and recipe secrets: owner-only, whatever the umask.
    crate::root::make_private(iso)?;
    Ok(())
}

/// The seed holds the console password: only the owner reads it.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    file.write_all(bytes)
        .map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// The `#cloud-config-archive` user-data: the users document, then the 9p mounts document.
#[cfg(test)]
pub fn user_data(stored: &StoredVm, pubkey: &str) -> String {
    user_data_with(stored, pubkey, None)
}

/// [`user_data`] plus, when given, the recipes document (`recipes::seed::cloud_config`).
pub fn user_data_with(stored: &StoredVm, pubkey: &str, recipes: Option<String>) -> String {
    let shell = if stored.config.os == "alpine" {
        "/bin/ash"
    } else {
        "/bin/bash"
    };
    let mut users = format!(
        "users:\n  - name: stoat\n    sudo: {}\n    shell: {shell}\n    ssh_authorized_keys:\n      - {}\n",
        quote("ALL=(ALL) NOPASSWD:ALL"),
        quote(pubkey)
    );
    if !stored.config.console_password.is_empty() {
        users.push_str(&format!(
            "    lock_passwd: false\n    plain_text_passwd: {}\n",
            quote(&stored.config.console_password)
        ));
    }
    users.push_str("ssh_pwauth: false\n");
    // The guest resolves its own name (127.0.1.1), so `sudo` never warns that it cannot.
    users.push_str("manage_etc_hosts: localhost\n");
    users.push_str(&format!(
        "bootcmd:\n  - [sh, -c, {}]\n  - [sh, -c, {}]\n",
        quote(NEW_MACHINE_ID),
        quote(NO_PASSWORD_SSH)
    ));
    let mut mounts = String::from("mounts:\n");
    mounts.push_str(&mount_line("work", "/mnt/work", "rw"));
    if !stored.config.share.is_empty() {
        mounts.push_str(&mount_line("host", "/mnt/host", "ro"));
    }
    let mut out = String::from("#cloud-config-archive\n");
    for content in [Some(users), Some(mounts), recipes].into_iter().flatten() {
        out.push_str(&format!(
            "- type: text/cloud-config\n  merge_how: {}\n  content: |\n",
            quote(MERGE_HOW)
        ));
        for line in content.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

fn mount_line(tag: &str, at: &str, access: &str) -> String {
    format!(
        "  - [{tag}, {at}, 9p, {}, \"0\", \"0\"]\n",
        quote(&format!(
            "trans=virtio,version=9p2000.L,{access},_netdev,nofail"
        ))
    )
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Runs a host tool; a non-zero exit is a `Tool` error carrying its stderr.
fn run_tool(env: &Env, name: &str, command: &mut Command) -> Result<()> {
    command.env("PATH", env.path_var()).stdin(Stdio::null());
    let output = crate::child::output(command, crate::child::Group::Own)
        .map_err(|e| e.into_error(&format!("run {name}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Tool {
        tool: name.into(),
        message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::VmConfig;

    fn vm(password: &str, share: &str) -> StoredVm {
        StoredVm {
            name: "w".into(),
            dir: "/r/w".into(),
            config: VmConfig {
                console_password: password.into(),
                share: share.into(),
                ..VmConfig::default()
            },
        }
    }

    #[test]
    fn user_data_has_user_key_and_mounts() {
        let text = user_data(&vm("", "/h"), "ssh-ed25519 AAA stoat");
        assert!(text.starts_with("#cloud-config-archive\n"));
        assert!(text.contains("      - name: stoat\n"));
        assert!(text.contains("- \"ssh-ed25519 AAA stoat\""));
        assert!(text
            .contains("[work, /mnt/work, 9p, \"trans=virtio,version=9p2000.L,rw,_netdev,nofail\""));
        assert!(text.contains("[host, /mnt/host, 9p"));
        assert!(!text.contains("plain_text_passwd"));
    }

    /// The early step that spares sshd cloud-init's restart, run by a real shell on a planted
    /// /etc: it writes the setting where set-passwords looks, once, and leaves an existing one.
    #[test]
    fn password_logins_are_off_before_sshd_starts_where_cloud_init_looks() {
        let run = |etc: &std::path::Path| {
            let script = NO_PASSWORD_SSH.replace("/etc/", &format!("{}/", etc.display()));
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
        let tmp = tempfile::tempdir().unwrap();
        // No OpenSSH (the dropbear guest): nothing is written.
        run(tmp.path());
        assert!(!tmp.path().join("ssh").exists());
        // sshd_config includes its folder: the drop-in gets the setting, 0600, once.
        let ssh = tmp.path().join("ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        let config = format!(
            "Include {}/ssh/sshd_config.d/*.conf\n#PasswordAuthentication yes\n",
            tmp.path().display()
        );
        std::fs::write(ssh.join("sshd_config"), &config).unwrap();
        run(tmp.path());
        run(tmp.path());
        let drop_in = ssh.join("sshd_config.d/50-cloud-init.conf");
        assert_eq!(
            std::fs::read_to_string(&drop_in).unwrap(),
            "PasswordAuthentication no\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&drop_in).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_to_string(ssh.join("sshd_config")).unwrap(),
            config
        );
        // No include: sshd_config itself, unless it sets the option already.
        std::fs::remove_dir_all(ssh.join("sshd_config.d")).unwrap();
        std::fs::write(ssh.join("sshd_config"), "Port 22\n").unwrap();
        run(tmp.path());
        assert_eq!(
            std::fs::read_to_string(ssh.join("sshd_config")).unwrap(),
            "Port 22\nPasswordAuthentication no\n"
        );
        std::fs::write(ssh.join("sshd_config"), "PasswordAuthentication yes\n").unwrap();
        run(tmp.path());
        assert_eq!(
            std::fs::read_to_string(ssh.join("sshd_config")).unwrap(),
            "PasswordAuthentication yes\n"
        );
    }

    #[test]
    fn console_password_is_quoted() {
        let text = user_data(&vm("a\"b", ""), "k");
        assert!(text.contains("plain_text_passwd: \"a\\\"b\""));
        assert!(text.contains("lock_passwd: false"));
        assert!(!text.contains("/mnt/host"));
    }
}
