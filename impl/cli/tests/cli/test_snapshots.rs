//! The human output of the commands whose text no other test pins, through the real binary
//! in the fake tier (planted VMs, a planted image, real qemu-img for cold snapshots; nothing
//! boots), as inline insta snapshots beside the command each pins. Insta filters
//! (`TestEnv::snapshot_settings`, and a test's own) mask the sandbox's paths, ports and times,
//! so a snapshot says what a person reads and nothing of this machine. Each snapshot was read
//! when it was recorded: a change of text is a review, not a formality (`cargo insta review`
//! rewrites them). Not pinned here: text that is this host's (doctor:
//! test_ux pins it on planted hosts), generated text (completions, man), the remote-recipe
//! verbs (test_remote, beside the git remotes they need) and what needs a booted guest to
//! succeed (up, exec, ssh, cp, screenshot: their refusals are here).

use crate::common::{TestEnv, ALPINE_VIRT};

/// stdout and stderr of a human run (stderr after a `--- stderr` line); asserts its exit.
pub(crate) fn human(env: &TestEnv, args: &[&str], success: bool) -> String {
    let out = env.run(args);
    assert_eq!(
        out.status.success(),
        success,
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr);
    }
    text
}

/// A sandbox with one stopped VM `w` (port 2250) and the alpine-virt image in isos/.
fn with_a_vm() -> TestEnv {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2250);
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    std::fs::write(isos.join("alpine-virt-3.24.1-x86_64.iso"), b"image").unwrap();
    env
}

#[test]
fn ls_and_get() {
    let env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(
        human(&env, &["ls"], true),
        @"no VMs; create one with `stoat create <name> --image <id>`"
    );
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["ls"], true), @r"
    NAME  MODE   STATE    CPUS  RAM    DISK  IMAGE       SSH
    w     cloud  stopped  1     1024M  8G    base.qcow2  :2250
    ");
}

#[test]
fn images_create_update_and_get() {
    let env = TestEnv::new();
    // The ssh port a new VM gets: another process on this host may hold the first free one.
    let mut settings = env.snapshot_settings();
    settings.add_filter(r"ssh port(:?) \d+", "ssh port$1 [PORT]");
    let _masked = settings.bind_to_scope();
    env.plant_image(ALPINE_VIRT);
    insta::assert_snapshot!(human(&env, &["images"], true), @r"
    ID               OS      VARIANT      BACKEND    SIZE       STATE           FILE                           USED BY
    ubuntu-24.04     ubuntu  24.04 LTS    cloudinit  ~595.0MiB  not downloaded
    debian-13        debian  13 (trixie)  cloudinit  ~328.0MiB  not downloaded
    fedora-cloud     fedora  44           cloudinit  ~557.0MiB  not downloaded
    arch-cloud       arch    rolling      cloudinit  ~530.0MiB  not downloaded
    alpine-standard  alpine  standard     apkovl     ~352.0MiB  not downloaded
    alpine-virt      alpine  virt         apkovl     5B         downloaded      alpine-virt-3.24.1-x86_64.iso  -
    alpine-cloud     alpine  3.24 cloud   cloudinit  ~175.0MiB  not downloaded

    5B in images no VM uses: `stoat prune --images --apply` frees it
    ");
    let created = human(&env, &["create", "w", "--image", "alpine-virt"], true);
    insta::assert_snapshot!(created, @r"
    created w: alpine live (apkovl), 4 cpus, 4096 MB, ssh port [PORT]
    start it with: stoat up w
    ");
    insta::assert_snapshot!(
        human(&env, &["update", "w", "--ram", "1024", "--cpus", "2"], true),
        @"updated w: cpus, ram"
    );
    // -q: the display lines are the host's (which viewer is installed), pinned elsewhere.
    let got = human(&env, &["-q", "get", "w"], true);
    insta::assert_snapshot!(got, @r"
    name: w
    os: alpine
    image: alpine-virt-3.24.1-x86_64.iso
    mode: live
    backend: apkovl
    state: stopped
    health: unknown
    cpus: 2
    ram: 1024 MB
    disk: none
    share: none
    ssh port: [PORT]
    ssh user: root
    recipes: none
    forwards: none
    agent access: exec
    ");
}

#[test]
fn cold_snapshots_of_a_disk_vm() {
    let env = TestEnv::new();
    // The list's size and date columns are qemu-img's and the clock's.
    let mut settings = env.snapshot_settings();
    settings.add_filter(r"(?m)^clean .*$", "clean [SIZE AND DATE]");
    let _masked = settings.bind_to_scope();
    crate::common::create_disk(&env, "d");
    insta::assert_snapshot!(human(&env, &["snapshot", "d"], true), @"d has no snapshots");
    insta::assert_snapshot!(
        human(&env, &["snapshot", "d", "clean"], true),
        @"saved snapshot clean of d"
    );
    insta::assert_snapshot!(human(&env, &["snapshot", "d"], true), @r"
    TAG    SIZE  CREATED              VM STATE
    clean [SIZE AND DATE]
    ");
    insta::assert_snapshot!(
        human(&env, &["snapshot", "d", "clean", "--restore"], true),
        @"restored d to snapshot clean"
    );
    insta::assert_snapshot!(
        human(&env, &["snapshot", "d", "clean", "--delete"], true),
        @"deleted snapshot clean of d"
    );
}

#[test]
fn forward_show_and_set() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["forward", "w"], true), @"w has no port forwards");
    insta::assert_snapshot!(human(&env, &["forward", "w", "8080:80"], true), @"8080:80");
    insta::assert_snapshot!(human(&env, &["forward", "w"], true), @"8080:80");
}

#[test]
fn version_and_ssh_command() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["version"], true), @"stoat [VERSION] (contract 3)");
    insta::assert_snapshot!(
        human(&env, &["ssh-command", "w"], true),
        @"ssh -p 2250 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o BatchMode=yes -i [ROOT]/id_stoat stoat@127.0.0.1"
    );
}

#[test]
fn recipes_and_guests() {
    let env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["recipes", "--os", "alpine"], true), @r"
    NAME       DESCRIPTION
    devtools   git, a compiler, an editor and basic fetch tools
    docker     Docker engine and the compose plugin
    tailscale  Tailscale daemon, installed and started (join manually)
    xfce       XFCE desktop with autologin startx on tty1
    ");
    insta::assert_snapshot!(
        human(&env, &["check-recipes", "docker", "--os", "alpine"], true),
        @"docker: applicable to alpine"
    );
    // Human mode exits 1 when a recipe does not apply (docs/decisions/recipes.md).
    insta::assert_snapshot!(
        human(&env, &["check-recipes", "docker,nope", "--os", "alpine"], false),
        @r#"no such recipe "nope""#
    );
    insta::assert_snapshot!(human(&env, &["guest", "ls"], true), @r"
    NAME    INIT     BACKEND    CAPABILITIES    SOURCE
    alpine  openrc   apkovl     apk,openrc      bundled
    ubuntu  systemd  cloudinit  apt,systemd     bundled
    debian  systemd  cloudinit  apt,systemd     bundled
    fedora  systemd  cloudinit  dnf,systemd     bundled
    arch    systemd  cloudinit  pacman,systemd  bundled
    ");
    insta::assert_snapshot!(human(&env, &["guest", "show", "alpine"], true), @r"
    name: alpine
    source: bundled
    init: openrc
    shell: /bin/ash
    installer: setup-alpine
    default backend: apkovl
    default ssh user: root
    escalate: doas -n
    capabilities: apk, openrc
    aliases: none
    filename hints: alpine
    seed packages: openssh, doas
    pkg setup: apk update
    pkg install: apk --wait 60 add
    pkg env: none
    runtime packages: python3=python3
    svc enable: rc-update add {name} default
    svc restart: rc-service {name} restart
    svc start: rc-service {name} start
    svc status: rc-service {name} status
    svc stop: rc-service {name} stop
    cmd add_user_to_group: addgroup {name}
    cmd poweroff: poweroff
    cmd reboot: reboot
    backend apkovl: kernel_modules=loop,squashfs,sd-mod,usb-storage
    backend cloudinit: skip_9p=false
    ");
}

#[test]
fn project_init_and_status() {
    let env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["init"], true), @r"
    wrote [HOME]/stoat.toml (project home)
    declare VMs under [vm.<key>], then run `stoat up`
    ");
    insta::assert_snapshot!(human(&env, &["status"], true), @r"
    project home ([HOME])
    no VMs declared; add a [vm.<key>] table to stoat.toml
    ");
}

#[test]
fn prune_dry_run() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["prune"], true), @"nothing to prune");
}

#[test]
fn mcp_doctor_and_install() {
    let env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["mcp", "doctor"], true), @r"
    stoat [VERSION] serves MCP over stdio (contract 3): [STOAT] mcp
    CLIENT          STOAT ENTRY    CONFIG
    claude-desktop  not installed  [HOME]/.config/Claude/claude_desktop_config.json
    claude-code     not installed  [HOME]/.claude.json
    cursor          not installed  [HOME]/.cursor/mcp.json
    vscode          not installed  [HOME]/.config/Code/User/mcp.json
    windsurf        not installed  [HOME]/.codeium/windsurf/mcp_config.json
    gemini-cli      not installed  [HOME]/.gemini/settings.json
    add or refresh an entry with: stoat mcp install <client>
    ");
    insta::assert_snapshot!(
        human(&env, &["mcp", "install", "cursor"], true),
        @"added stoat to cursor ([HOME]/.cursor/mcp.json); restart the client to pick it up"
    );
    insta::assert_snapshot!(human(&env, &["mcp", "doctor"], true), @r"
    stoat [VERSION] serves MCP over stdio (contract 3): [STOAT] mcp
    CLIENT          STOAT ENTRY    CONFIG
    claude-desktop  not installed  [HOME]/.config/Claude/claude_desktop_config.json
    claude-code     not installed  [HOME]/.claude.json
    cursor          current        [HOME]/.cursor/mcp.json
    vscode          not installed  [HOME]/.config/Code/User/mcp.json
    windsurf        not installed  [HOME]/.codeium/windsurf/mcp_config.json
    gemini-cli      not installed  [HOME]/.gemini/settings.json
    add or refresh an entry with: stoat mcp install <client>
    ");
}

#[test]
fn errors_in_human_mode() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["get", "ghost"], false), @r"
    --- stderr
    stoat: get: not found: ghost
    ");
    insta::assert_snapshot!(human(&env, &["exec", "w", "--", "true"], false), @r"
    --- stderr
    stoat: exec: not running: w is not running
    hint: start it with `stoat up w`
    ");
    insta::assert_snapshot!(human(&env, &["rm", "ghost", "--yes"], false), @r"
    --- stderr
    stoat: rm: not found: ghost
    ");
}

#[test]
fn clone_rm_and_wait() {
    let env = TestEnv::new();
    // What another process on this host decides: the port a new VM gets, and durations.
    let mut settings = env.snapshot_settings();
    settings.add_filter(r"port \d+", "port [PORT]");
    settings.add_filter(r"after \d+\.\ds", "after [SECS]");
    let _masked = settings.bind_to_scope();
    crate::common::create_live(&env, "w");
    insta::assert_snapshot!(
        human(&env, &["clone", "w", "w2"], true),
        @"cloned w as w2 (ssh port [PORT]); port forwards are not copied"
    );
    insta::assert_snapshot!(human(&env, &["rm", "w2", "--yes"], true), @"deleted w2");
    insta::assert_snapshot!(human(&env, &["wait", "w", "--until", "stopped"], true), @"w is stopped (after [SECS])");
    insta::assert_snapshot!(
        human(&env, &["apply", "w", "--dry-run"], true),
        @"w has no recipes to plan"
    );
}

#[test]
fn recipe_list_show_and_new() {
    let env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(human(&env, &["recipe", "new", "mine", "--os", "alpine"], true), @r"
    created [ROOT]/recipes/mine/
    edit recipe.toml and install.sh there
    ");
    insta::assert_snapshot!(human(&env, &["recipe", "list"], true), @r"
    search order:
      global   [ROOT]/recipes/.remote
      local    [ROOT]/recipes
      bundled  [ROOT]/recipes

    NAME       SCOPE    COMMIT  DESCRIPTION
    mine       local            TODO: what mine sets up
    devtools   bundled          git, a compiler, an editor and basic fetch tools
    docker     bundled          Docker engine and the compose plugin
    tailscale  bundled          Tailscale daemon, installed and started (join manually)
    xfce       bundled          XFCE desktop with autologin startx on tty1
    ");
    insta::assert_snapshot!(human(&env, &["recipe", "show", "docker"], true), @r"
    docker  Docker engine and the compose plugin
    schema 3, runtime sh, reboot false
    param user string (default from ssh_user)  account added to the docker group
    output socket  path of the docker socket
    health: docker info (timeout 30s)
    ");
}

#[test]
fn logs_schema_and_help() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    std::fs::write(env.root().join("w/console.log"), "booting\nlogin:\n").unwrap();
    insta::assert_snapshot!(human(&env, &["logs", "w"], true), @r"
    booting
    login:
    ");
    insta::assert_snapshot!(human(&env, &["schema"], true), @r"
    codes.json
    data/apply.json
    data/apply/dry-run.json
    data/apply/run.json
    data/capabilities.json
    data/check-recipes.json
    data/clone.json
    data/cp.json
    data/create.json
    data/doctor.json
    data/down.json
    data/exec.json
    data/forward.json
    data/forward/set.json
    data/forward/show.json
    data/get.json
    data/guest.json
    data/guest/ls.json
    data/guest/show.json
    data/help.json
    data/images.json
    data/init.json
    data/logs.json
    data/logs/stoat.json
    data/logs/vm.json
    data/ls.json
    data/mcp.json
    data/mcp/doctor.json
    data/mcp/install.json
    data/prune.json
    data/pull.json
    data/recipe.json
    data/recipe/add.json
    data/recipe/list.json
    data/recipe/new.json
    data/recipe/pins.json
    data/recipe/refresh.json
    data/recipe/rm.json
    data/recipe/search.json
    data/recipe/show.json
    data/recipes.json
    data/rm.json
    data/screenshot.json
    data/snapshot.json
    data/snapshot/act.json
    data/snapshot/list.json
    data/ssh-command.json
    data/status.json
    data/up.json
    data/update.json
    data/version.json
    data/wait.json
    defs.json
    dto/apply-plan.json
    dto/capability-report.json
    dto/capability.json
    dto/check.json
    dto/drift.json
    dto/forward.json
    dto/guest.json
    dto/image.json
    dto/index-entry.json
    dto/init-result.json
    dto/mcp-client.json
    dto/project-run-vm.json
    dto/project-run.json
    dto/project-status-vm.json
    dto/project-status.json
    dto/prune-item.json
    dto/recipe-added.json
    dto/recipe-detail.json
    dto/recipe-entry.json
    dto/recipe-health.json
    dto/recipe-issue.json
    dto/recipe-output.json
    dto/recipe-param.json
    dto/recipe-refreshed.json
    dto/recipe-removed.json
    dto/recipe-root.json
    dto/recipe.json
    dto/snapshot.json
    dto/vm-status.json
    dto/vm.json
    envelope.json
    error.json
    events/log.json
    events/progress.json
    events/stage.json
    events/vm.json
    ");
    insta::assert_snapshot!(human(&env, &["help"], true), @r"
    stoat: QEMU virtual machines on one host

    Usage: stoat [OPTIONS] [COMMAND]

    Commands:
      ls             List VMs
      get            Show one VM, with recipe state
      create         Create a VM from a catalog image, a file in isos/, or an image file's path
      update         Change a stopped or running VM's configuration
      up             Start a VM (and apply its recipes)
      down           Stop a VM
      wait           Wait until a VM is reachable, stopped, or has its recipes applied
      rm             Delete a VM
      clone          Copy a stopped VM (the copy and its source share nothing writable)
      exec           Run a command in a VM over ssh: stoat exec <vm> [--] <cmd>...
      ssh            Open an interactive ssh session, or run CMD with a terminal (replaces stoat)
      ssh-command    Print the ssh argv for a VM
      cp             Copy files or trees: stoat cp [-r] <src>... <dst>, one side <vm>:<path>
      forward        Show, set or clear a VM's port forwards (HOST:GUEST)
      images         List catalog and local images
      pull           Download a catalog image
      snapshot       List, save, restore or delete snapshots
      screenshot     Save a PNG of a running VM's screen
      prune          Delete leftovers (dry run unless --apply)
      apply          Run a VM's recipes
      recipes        List recipes offered to an OS
      check-recipes  Check that recipes can run on an OS
      recipe         Manage recipes: list, show, new, add, lock, sync, update, rm, refresh, search
      guest          Inspect guest OS definitions: ls, show
      logs           Show a VM's console or apply log, or stoat's own log
      doctor         Check this host
      capabilities   Report what this stoat and host can do
      schema         Print the JSON Schemas this binary speaks
      init           Create a stoat.toml project file here
      status         Compare a project's declarations with its VMs
      mcp            The MCP server and its client configuration
      completions    Print a shell completion script: stoat completions bash|zsh|fish
      man            Print a command's man page, or write every page with --dir
      version        Print the version
      help           Print help

    Options:
      -q, --quiet    Suppress progress chatter; never prompt [alias: --no-interactive]
      -V, --version  Print the version
      -h, --help     Print help

    Examples:
      stoat pull debian-13                    download and verify a catalog image
      stoat create work --image debian-13     a VM on it
      stoat up work                           start it; returns once stoat can log in
      stoat exec work -- uname -a             run a command in it
      stoat down work
      stoat help create                       one command's help, with its examples

    Add --json anywhere (before exec's VM name) for machine-readable output: contract v3.
    ");
}

#[test]
fn runtime_errors_in_human_mode() {
    let env = with_a_vm();
    let _masked = env.snapshot_settings().bind_to_scope();
    // A person's `down` of a stopped VM converges (exit 0, one line).
    insta::assert_snapshot!(human(&env, &["down", "w"], true), @"w is already stopped");
    insta::assert_snapshot!(human(&env, &["screenshot", "w"], false), @r"
    --- stderr
    stoat: screenshot: not running: w is not running
    hint: start it with `stoat up w`
    ");
    insta::assert_snapshot!(human(&env, &["cp", "w:/etc/hosts", "hosts"], false), @r"
    --- stderr
    stoat: cp: not running: w is not running
    hint: start it with `stoat up w`
    ");
    insta::assert_snapshot!(human(&env, &["apply", "w"], false), @r"
    --- stderr
    stoat: apply: not running: w is not running
    hint: start it with `stoat up w`
    ");
    insta::assert_snapshot!(human(&env, &["pull", "nope"], false), @r"
    --- stderr
    stoat: pull: no such image: nope
    ");
    insta::assert_snapshot!(human(&env, &["snapshot", "ghost", "list"], false), @r"
    --- stderr
    stoat: snapshot: not found: ghost
    ");
}

#[test]
fn a_snapshot_tagged_list_is_saved_and_the_listing_is_named() {
    let env = TestEnv::new();
    crate::common::create_disk(&env, "d");
    // Vagrant's `snapshot list`: the contract's tag is free text, so it is a save, and a
    // person is told how to list.
    insta::assert_snapshot!(
        human(&env, &["snapshot", "d", "list"], true),
        @"saved snapshot list of d (a tag; to list the snapshots: stoat snapshot d)"
    );
    let listed = env.json(&["snapshot", "d"]);
    assert_eq!(listed.data()["snapshots"][0]["tag"], "list");
    // Under --json the answer is the save's, as for any tag.
    let deleted = env.json(&["snapshot", "d", "list", "--delete"]);
    assert_eq!(deleted.data()["action"], "delete");
}
