//! What an error tells its reader to do next, kept as data until a front end spells it.
//!
//! Core is called by the CLI (flags such as `--ram 2048`) and by the MCP server (arguments
//! such as `ram_mb: 2048`). A message that names a setting or a follow-up command holds it as
//! a [`Setting`] or a [`Step`] inside a [`Said`]; whoever renders the error passes its
//! [`Spelling`]. [`Plain`], core's own, names no flag and no command line, so a message read
//! without a front end (`Display`, a test, a file written for no one in particular) tells
//! nobody to type a flag they may not have.

/// A setting a request carries, named by each front end in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Ram,
    Cpus,
    Disk,
    Mode,
    Os,
    Image,
    Backend,
    ConsolePassword,
    /// A recipe param, its value written `recipe.param=VALUE`.
    Param,
    /// The recipes an apply is limited to.
    Only,
    AgentAccess,
    SshPort,
    /// Replace what is already there (a snapshot's tag).
    Force,
    /// Take a forward away by its host port.
    Remove,
    /// Which of a VM's logs (console or apply).
    Which,
    /// Act on the project's stoat.toml rather than the user's recipes.
    Project,
}

impl Setting {
    /// The setting in words, as [`Plain`] says it.
    pub fn words(self) -> &'static str {
        match self {
            Setting::Ram => "ram",
            Setting::Cpus => "cpus",
            Setting::Disk => "disk",
            Setting::Mode => "mode",
            Setting::Os => "os",
            Setting::Image => "image",
            Setting::Backend => "backend",
            Setting::ConsolePassword => "console password",
            Setting::Param => "param",
            Setting::Only => "only",
            Setting::AgentAccess => "agent access",
            Setting::SshPort => "ssh port",
            Setting::Force => "force",
            Setting::Remove => "remove",
            Setting::Which => "which",
            Setting::Project => "project",
        }
    }
}

/// A value given to a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A count or a size in MiB.
    Number(u64),
    /// A word or a size with its unit, as it would be typed.
    Text(String),
    /// Stands for what the reader fills in (`<os>`, `PORT`, `r.p=VALUE`).
    Placeholder(String),
}

impl Value {
    /// The value as a person would type it, whoever reads it.
    pub fn typed(&self) -> String {
        match self {
            Value::Number(n) => n.to_string(),
            Value::Text(text) | Value::Placeholder(text) => text.clone(),
        }
    }
}

/// An operation a follow-up step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Logs,
    Down,
    Update,
    Forward,
    Snapshot,
    RecipeLock,
    RecipeSync,
}

impl Op {
    /// The operation as the CLI's command words and [`Plain`] name it.
    pub fn words(self) -> &'static str {
        match self {
            Op::Logs => "logs",
            Op::Down => "down",
            Op::Update => "update",
            Op::Forward => "forward",
            Op::Snapshot => "snapshot",
            Op::RecipeLock => "recipe lock",
            Op::RecipeSync => "recipe sync",
        }
    }
}

/// A whole follow-up: an operation, on a VM, with its other operands and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub op: Op,
    pub vm: Option<String>,
    /// Operands after the VM (a snapshot's tag).
    pub operands: Vec<String>,
    pub settings: Vec<(Setting, Option<Value>)>,
}

impl Step {
    /// `op` on `vm`, nothing set yet.
    pub fn on(op: Op, vm: &str) -> Step {
        Step {
            op,
            vm: Some(vm.to_owned()),
            operands: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// `op` on no VM.
    pub fn alone(op: Op) -> Step {
        Step {
            op,
            vm: None,
            operands: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// Adds an operand after the VM.
    pub fn operand(mut self, operand: &str) -> Step {
        self.operands.push(operand.to_owned());
        self
    }

    /// Adds a setting, with or without a value.
    pub fn with(mut self, setting: Setting, value: Option<Value>) -> Step {
        self.settings.push((setting, value));
        self
    }
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// A setting, alone or with a value (`drop --disk`, `use --mode disk`).
    Setting(Setting, Option<Value>),
    /// An example of a setting's value; a front end may show each form it takes.
    Example(Setting, Value),
    Step(Step),
}

/// A message whose settings and steps each front end spells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said(Vec<Piece>);

impl Said {
    /// Starts a message with `text`.
    pub fn text(text: impl Into<String>) -> Said {
        Said(vec![Piece::Text(text.into())])
    }

    /// Adds text.
    pub fn then(mut self, text: impl Into<String>) -> Said {
        self.0.push(Piece::Text(text.into()));
        self
    }

    /// Adds a setting with no value.
    pub fn setting(mut self, setting: Setting) -> Said {
        self.0.push(Piece::Setting(setting, None));
        self
    }

    /// Adds a setting given `value`.
    pub fn set(mut self, setting: Setting, value: Value) -> Said {
        self.0.push(Piece::Setting(setting, Some(value)));
        self
    }

    /// Adds an example value of a setting.
    pub fn example(mut self, setting: Setting, value: Value) -> Said {
        self.0.push(Piece::Example(setting, value));
        self
    }

    /// Adds every piece of `more`.
    pub fn join(mut self, more: Said) -> Said {
        self.0.extend(more.0);
        self
    }

    /// Adds a follow-up step.
    pub fn step(mut self, step: Step) -> Said {
        self.0.push(Piece::Step(step));
        self
    }

    /// The pieces, in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.0
    }

    /// The message in `spelling`'s words.
    pub fn render(&self, spelling: &dyn Spelling) -> String {
        self.0
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.clone(),
                Piece::Setting(setting, value) => spelling.setting(*setting, value.as_ref()),
                Piece::Example(setting, value) => spelling.example(*setting, value),
                Piece::Step(step) => spelling.step(step),
            })
            .collect()
    }
}

/// How a front end names settings and follow-up steps in a message.
pub trait Spelling: Send + Sync {
    /// A setting, alone or given a value: the CLI's `--ram 2048`, MCP's `ram_mb: 2048`.
    fn setting(&self, setting: Setting, value: Option<&Value>) -> String;

    /// An example of a setting's value; by default the setting given it.
    fn example(&self, setting: Setting, value: &Value) -> String {
        self.setting(setting, Some(value))
    }

    /// A follow-up step: the CLI's `` `stoat logs w --which console` ``, MCP's tool call.
    fn step(&self, step: &Step) -> String;
}

/// Core's own spelling: settings in words and steps as operations, never a flag.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Spelling for Plain {
    fn setting(&self, setting: Setting, value: Option<&Value>) -> String {
        match value {
            Some(value) => format!("{} {}", setting.words(), value.typed()),
            None => setting.words().to_owned(),
        }
    }

    fn step(&self, step: &Step) -> String {
        let mut text = format!("the {} operation", step.op.words());
        if let Some(vm) = &step.vm {
            text.push_str(&format!(" on {vm}"));
        }
        for operand in &step.operands {
            text.push_str(&format!(" {operand}"));
        }
        let settings: Vec<String> = step
            .settings
            .iter()
            .map(|(setting, value)| self.setting(*setting, value.as_ref()))
            .collect();
        if !settings.is_empty() {
            text.push_str(&format!(" with {}", settings.join(", ")));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every setting and operation, so each one's plain words are checked.
    const SETTINGS: [Setting; 16] = [
        Setting::Ram,
        Setting::Cpus,
        Setting::Disk,
        Setting::Mode,
        Setting::Os,
        Setting::Image,
        Setting::Backend,
        Setting::ConsolePassword,
        Setting::Param,
        Setting::Only,
        Setting::AgentAccess,
        Setting::SshPort,
        Setting::Force,
        Setting::Remove,
        Setting::Which,
        Setting::Project,
    ];
    const OPS: [Op; 7] = [
        Op::Logs,
        Op::Down,
        Op::Update,
        Op::Forward,
        Op::Snapshot,
        Op::RecipeLock,
        Op::RecipeSync,
    ];

    #[test]
    fn plain_words_hold_no_flag() {
        for setting in SETTINGS {
            let valued = Plain.setting(setting, Some(&Value::Placeholder("X".into())));
            for said in [Plain.setting(setting, None), valued] {
                assert!(!said.contains("--"), "{said}");
            }
            for op in OPS {
                let step = Step::on(op, "w").operand("t").with(setting, None);
                let said = Plain.step(&step);
                assert!(!said.contains("--") && !said.contains("stoat "), "{said}");
            }
        }
    }

    /// String literals in core's own code (test modules left out) that name a CLI flag, the
    /// way a message would (`pass --os`, `` `stoat logs w --which` ``): a message says it with
    /// a [`Setting`] or a [`Step`] instead. A literal that is one flag alone (`"--quiet"`) is
    /// an argument of a host tool, not a message.
    #[test]
    fn no_message_in_core_names_a_cli_flag() {
        // Text that is not a message: a script the guest runs, and the comments of files
        // written for a person to edit beside the CLI.
        const NOT_MESSAGES: [(&str, &str); 3] = [
            ("recipes/apply.rs", "cloud-init status --wait"),
            ("app/project.rs", "# stoat.toml: the VMs of this project."),
            ("project/lock.rs", "# stoat.lock: remote recipe pins"),
        ];
        let sample = "let a = \"pass --os <os>\"; let b = '\"'; let c = r#\"--quiet\"#;";
        assert_eq!(literals(sample), ["pass --os <os>", "--quiet"]);
        assert!(names_flag("pass --os <os>") && !names_flag("a-b--c"));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        for file in rust_files(&src) {
            let relative = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if relative == "roundtrip_props.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for literal in literals(code) {
                let lone_flag = literal.starts_with("--") && !literal.contains(' ');
                let allowed = NOT_MESSAGES
                    .iter()
                    .any(|(path, part)| relative == *path && literal.contains(part));
                if names_flag(&literal) && !lone_flag && !allowed {
                    found.push(format!("{relative}: {literal:?}"));
                }
            }
        }
        assert!(
            found.is_empty(),
            "flags in core's messages:\n{}",
            found.join("\n")
        );
    }

    fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(rust_files(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
        files
    }

    /// Whether `--word` starts the literal or follows a space, `(`, `[` or a backtick.
    fn names_flag(literal: &str) -> bool {
        let chars: Vec<char> = literal.chars().collect();
        chars.windows(3).enumerate().any(|(i, w)| {
            w[0] == '-'
                && w[1] == '-'
                && w[2].is_ascii_lowercase()
                && (i == 0 || matches!(chars[i - 1], ' ' | '(' | '[' | '`' | '\n'))
        })
    }

    /// The contents of the string literals in `code`, comments and char literals skipped.
    fn literals(code: &str) -> Vec<String> {
        let chars: Vec<char> = code.chars().collect();
        let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
        let mut found = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            if c == '/' && at(i + 1) == '/' {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && at(i + 1) == '*' {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && at(i + 1) == '/') {
                    i += 1;
                }
                i += 2;
            } else if c == 'r' && !ident_before && matches!(at(i + 1), '"' | '#') {
                let mut j = i + 1;
                while at(j) == '#' {
                    j += 1;
                }
                if at(j) != '"' {
                    i += 1;
                    continue;
                }
                let hashes = j - i - 1;
                let start = j + 1;
                let mut end = start;
                while end < chars.len()
                    && !(chars[end] == '"' && (1..=hashes).all(|k| at(end + k) == '#'))
                {
                    end += 1;
                }
                found.push(chars[start..end.min(chars.len())].iter().collect());
                i = end + 1 + hashes;
            } else if c == '"' {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '"' {
                    end += if chars[end] == '\\' { 2 } else { 1 };
                }
                found.push(chars[start..end.min(chars.len())].iter().collect());
                i = end + 1;
            } else if c == '\'' {
                // A char literal ('x', '\n', '\u{1F}') is skipped whole; a lifetime is not one.
                if at(i + 1) == '\\' {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        found
    }

    #[test]
    fn plain_names_no_flag_and_no_command_line() {
        let said = Said::text("drop ")
            .setting(Setting::Disk)
            .then(" or use ")
            .set(Setting::Mode, Value::Text("disk".into()))
            .then("; ")
            .step(
                Step::on(Op::Snapshot, "w")
                    .operand("t")
                    .with(Setting::Force, None),
            );
        assert_eq!(
            said.render(&Plain),
            "drop disk or use mode disk; the snapshot operation on w t with force"
        );
    }
}
