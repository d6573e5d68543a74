//! The `Examples:` block of each command's `--help`, which the man pages render as their
//! EXAMPLES section (`commands::generated`). Each line is a command a user can paste, then
//! what it does; every flag named here is one the grammar parses (the test of the man pages
//! runs each example's words through the parser).

pub const LS: &str = "Examples:
  stoat ls                      every VM, with its state and ssh port
  stoat ls --project            only the VMs of the project in this directory
  stoat --json ls               the same list as one JSON result line";

pub const GET: &str = "Examples:
  stoat get work                one VM: its settings, forwards and recipe state";

pub const CREATE: &str = "Examples:
  stoat create work --image debian-13
  stoat create work --image debian-13 --cpus 4 --ram 4G --disk 20G
  stoat create dev --image debian-13 --recipes docker,devtools
  stoat create web --image debian-13 --forward 8080:80   host port 8080 to the guest's 80
  stoat create work --image debian-13 --console-password random   one shown only now (default: stoat)
  stoat create mine --image ./disk.qcow2   a disk image of your own (stored absolute)";

pub const UPDATE: &str = "Examples:
  stoat update work --ram 8G --cpus 4   taken at the next start when running
  stoat update work --disk 40G          grow the disk (never shrink)";

pub const UP: &str = "Examples:
  stoat up work                 start work, apply its recipes, wait until ssh answers
  stoat up work --no-wait       return once QEMU runs
  stoat up                      every VM of the project in this directory";

pub const DOWN: &str = "Examples:
  stoat down work               stop work (ACPI power-off, then a forced stop)
  stoat down                    every VM of the project in this directory";

pub const WAIT: &str = "Examples:
  stoat wait work                        until ssh answers (default 2m)
  stoat wait work --until applied --timeout 10m
  stoat wait work --until stopped";

pub const RM: &str = "Examples:
  stoat rm work                 delete work and its disk
  stoat rm -y                   every VM of the project in this directory";

pub const CLONE: &str = "Examples:
  stoat clone work work2        copy the stopped VM work as work2";

pub const EXEC: &str = "Examples:
  stoat exec work -- uname -a
  stoat exec -t work -- htop    with a terminal (human mode: stoat becomes ssh)
  stoat exec work -- sh -c 'cd /srv && make'
  stoat --json exec work -- cat /etc/os-release";

pub const SSH: &str = "Examples:
  stoat ssh work                an interactive shell in work
  stoat ssh work -- top         one command, with a terminal";

pub const SSH_COMMAND: &str = "Examples:
  stoat ssh-command work        the ssh argv, to paste or to use in scripts";

pub const CP: &str = "Examples:
  stoat cp ./notes.txt work:/tmp/
  stoat cp work:/var/log/syslog ./
  stoat cp -r ./src work:/srv/app
  stoat cp - work:/tmp/in.txt < in.txt";

pub const FORWARD: &str = "Examples:
  stoat forward work                      show the forwards
  stoat forward work --add 8080:80        add one, keep the others
  stoat forward work --remove 8080
  stoat forward work 8080:80 8443:443     replace the whole list
  stoat forward work --clear";

pub const IMAGES: &str = "Examples:
  stoat images                  catalog ids, what is downloaded, your own files";

pub const PULL: &str = "Examples:
  stoat pull debian-13          download and verify a catalog image";

pub const SNAPSHOT: &str = "Examples:
  stoat snapshot work                     list the snapshots
  stoat snapshot work before-upgrade      save one (refused if the tag is in use)
  stoat snapshot work before-upgrade --force
  stoat snapshot work before-upgrade --restore
  stoat snapshot work before-upgrade --delete";

pub const SCREENSHOT: &str = "Examples:
  stoat screenshot work                   into the VM's screenshots/ directory
  stoat screenshot work -o shot.png";

pub const PRUNE: &str = "Examples:
  stoat prune                   what would be deleted (a dry run)
  stoat prune --apply           delete it
  stoat prune --images --apply  also images no VM uses";

pub const APPLY: &str = "Examples:
  stoat apply work                        run work's recipes again
  stoat apply work --only docker
  stoat apply work --dry-run              print the plan, run nothing
  stoat apply work --param docker.user=me";

pub const RECIPES: &str = "Examples:
  stoat recipes                 every recipe
  stoat recipes --os debian";

pub const CHECK_RECIPES: &str = "Examples:
  stoat check-recipes docker,devtools --os debian";

pub const RECIPE: &str = "Examples:
  stoat recipe list
  stoat recipe show docker
  stoat recipe new hello --os debian
  stoat recipe add https://example.org/recipes/hello.git --ref v1
  stoat recipe search docker";

pub const GUEST: &str = "Examples:
  stoat guest ls
  stoat guest show debian";

pub const LOGS: &str = "Examples:
  stoat logs work               the last 50 console lines
  stoat logs work -f            keep printing until work stops or Ctrl-C
  stoat logs work --which apply -n 0
  stoat logs                    stoat's own log";

pub const DOCTOR: &str = "Examples:
  stoat doctor                  what this host has and lacks, with the fix";

pub const CAPABILITIES: &str = "Examples:
  stoat --json capabilities
  stoat capabilities work";

pub const SCHEMA: &str = "Examples:
  stoat schema                  every schema path
  stoat schema ls               the schema of ls's data";

pub const INIT: &str = "Examples:
  stoat init                    write stoat.toml here";

pub const STATUS: &str = "Examples:
  stoat status                  the project's VMs against their declarations";

pub const MCP: &str = "Examples:
  stoat mcp                     serve MCP on stdin/stdout (for a client to start)
  stoat mcp doctor
  stoat mcp install claude-code";

pub const COMPLETIONS: &str = "Examples:
  source <(stoat completions bash)
  stoat completions zsh > \"${fpath[1]}/_stoat\"
  stoat completions fish > ~/.config/fish/completions/stoat.fish";

pub const MAN: &str = "Examples:
  stoat man create | man -l -
  stoat man --dir ~/.local/share/man/man1";

pub const RECIPE_LIST: &str = "Examples:
  stoat recipe list             every recipe, bundled, global and project, in search order
  stoat --json recipe list";

pub const RECIPE_SHOW: &str = "Examples:
  stoat recipe show docker      its manifest: OS, params, outputs, health check";

pub const RECIPE_NEW: &str = "Examples:
  stoat recipe new hello                  a recipe skeleton in the data root's recipes/
  stoat recipe new hello --os debian      one that targets Debian guests";

pub const RECIPE_ADD: &str = "Examples:
  stoat recipe add https://example.org/recipes/hello.git
  stoat recipe add https://example.org/recipes/hello.git --ref v1
  stoat recipe add ../hello --project     into this directory's stoat.toml and stoat.lock";

pub const RECIPE_LOCK: &str = "Examples:
  stoat recipe lock             pin the global remote recipes at their current commits
  stoat recipe lock --project   write the project's pins into stoat.lock";

pub const RECIPE_SYNC: &str = "Examples:
  stoat recipe sync             fetch the remote recipes at their pins
  stoat recipe sync --project   what a fresh checkout of a project runs first";

pub const RECIPE_UPDATE: &str = "Examples:
  stoat recipe update           move every remote recipe to its ref's newest commit
  stoat recipe update hello     only this one";

pub const RECIPE_RM: &str = "Examples:
  stoat recipe rm hello
  stoat recipe rm hello --project";

pub const RECIPE_REFRESH: &str = "Examples:
  stoat recipe refresh          reinstall the bundled recipes this stoat carries";

pub const RECIPE_SEARCH: &str = "Examples:
  stoat recipe search           everything the index offers
  stoat recipe search docker    names and descriptions that mention docker";

pub const GUEST_LS: &str = "Examples:
  stoat guest ls                every guest OS definition, bundled and your own";

pub const GUEST_SHOW: &str = "Examples:
  stoat guest show debian       one definition: its user, escalation, package manager";

pub const MCP_DOCTOR: &str = "Examples:
  stoat mcp doctor              is this binary set up for MCP, and which clients know it";

pub const MCP_INSTALL: &str = "Examples:
  stoat mcp install claude-code
  stoat mcp install vscode";

pub const VERSION: &str = "Examples:
  stoat version                 stoat's version and the contract it speaks
  stoat --json version";

pub const HELP: &str = "Examples:
  stoat help                    every command
  stoat help create             the same as stoat create --help
  stoat help recipe add";

/// `stoat` itself: a first session, then how programs use it (its man page shows the
/// paragraph after the examples as NOTES).
pub const STOAT: &str = "Examples:
  stoat pull debian-13                    download and verify a catalog image
  stoat create work --image debian-13     a VM on it
  stoat up work                           start it; returns once stoat can log in
  stoat exec work -- uname -a             run a command in it
  stoat down work
  stoat help create                       one command's help, with its examples

Add --json anywhere (before exec's VM name) for machine-readable output: contract v3.";

/// Every block, for the test that parses each example: (the command's words, its block;
/// `""` is `stoat` itself).
#[cfg(test)]
pub const ALL: &[(&str, &str)] = &[
    ("", STOAT),
    ("ls", LS),
    ("get", GET),
    ("create", CREATE),
    ("update", UPDATE),
    ("up", UP),
    ("down", DOWN),
    ("wait", WAIT),
    ("rm", RM),
    ("clone", CLONE),
    ("exec", EXEC),
    ("ssh", SSH),
    ("ssh-command", SSH_COMMAND),
    ("cp", CP),
    ("forward", FORWARD),
    ("images", IMAGES),
    ("pull", PULL),
    ("snapshot", SNAPSHOT),
    ("screenshot", SCREENSHOT),
    ("prune", PRUNE),
    ("apply", APPLY),
    ("recipes", RECIPES),
    ("check-recipes", CHECK_RECIPES),
    ("recipe", RECIPE),
    ("guest", GUEST),
    ("logs", LOGS),
    ("doctor", DOCTOR),
    ("capabilities", CAPABILITIES),
    ("schema", SCHEMA),
    ("init", INIT),
    ("status", STATUS),
    ("mcp", MCP),
    ("completions", COMPLETIONS),
    ("man", MAN),
    ("recipe list", RECIPE_LIST),
    ("recipe show", RECIPE_SHOW),
    ("recipe new", RECIPE_NEW),
    ("recipe add", RECIPE_ADD),
    ("recipe lock", RECIPE_LOCK),
    ("recipe sync", RECIPE_SYNC),
    ("recipe update", RECIPE_UPDATE),
    ("recipe rm", RECIPE_RM),
    ("recipe refresh", RECIPE_REFRESH),
    ("recipe search", RECIPE_SEARCH),
    ("guest ls", GUEST_LS),
    ("guest show", GUEST_SHOW),
    ("mcp doctor", MCP_DOCTOR),
    ("mcp install", MCP_INSTALL),
    ("version", VERSION),
    ("help", HELP),
];
