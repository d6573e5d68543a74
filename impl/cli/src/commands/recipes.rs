//! The CLI adapters of the recipe and guest operations (`stoat_core::app::recipes`):
//! `recipes`, `check-recipes`, `recipe list|show|new|refresh`, the remote
//! `recipe add|lock|sync|update|rm|search`, `guest ls|show` (json-v3#per-command-data).
//! `recipe lock --project` is `commands::project::recipe_lock`.

use stoat_core::app::recipes::{self as app, Scope};
use stoat_core::Result;
use stoat_wire::dto::{Guest, RecipeAdded, RecipeListData, RecipePinsData, RecipeSchema};

use crate::ctx::Ctx;
use crate::grammar::{CheckRecipesArgs, GuestCommand, RecipeCommand, RecipesArgs};
use crate::human;
use crate::output::Reply;

/// `recipes [--os OS] [--backend B]`: what is offered (the backend does not change it).
pub fn recipes(ctx: &Ctx, args: &RecipesArgs) -> Result<Reply> {
    let data = app::recipes(ctx, args.os.as_deref())?;
    let human = schemas_human(&data.recipes);
    Ok(Reply::new(&data, human))
}

fn schemas_human(list: &[RecipeSchema]) -> String {
    if list.is_empty() {
        return "no recipes offered\n".into();
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|r| vec![r.name.clone(), r.description.clone()])
        .collect();
    human::table(&["NAME", "DESCRIPTION"], &rows)
}

/// `check-recipes NAMES --os OS [--backend B]`: always succeeds; `applicable` is the answer.
pub fn check_recipes(ctx: &Ctx, args: &CheckRecipesArgs) -> Result<Reply> {
    let data = app::check_recipes(ctx, &args.names, &args.os, args.backend.as_deref())?;
    let applicable = data.applicable;
    let human = if applicable {
        format!("{}: applicable to {}\n", args.names.join(", "), args.os)
    } else {
        data.issues
            .iter()
            .map(|i| format!("{}\n", i.reason))
            .collect()
    };
    Ok(Reply::new(&data, human).with_human_exit(if applicable { 0 } else { 1 }))
}

/// `recipe <subcommand>`.
pub fn recipe(ctx: &Ctx, command: &RecipeCommand) -> Result<Reply> {
    match command {
        RecipeCommand::List => list(ctx),
        RecipeCommand::Show(args) => show(ctx, &args.name),
        RecipeCommand::New(args) => new(ctx, &args.name, args.os.as_deref()),
        RecipeCommand::Refresh => refresh(ctx),
        RecipeCommand::Add(args) => {
            let added = app::add(
                ctx,
                &scope(args.project),
                &args.url,
                args.git_ref.as_deref(),
            )?;
            let human = format!("added {}", pin_line(&added));
            Ok(Reply::new(&added, human))
        }
        RecipeCommand::Lock(flag) if flag.project => super::project::recipe_lock(ctx),
        RecipeCommand::Lock(_) => pins_reply(app::lock(ctx)?, "locked"),
        RecipeCommand::Sync(flag) => pins_reply(app::sync(ctx, &scope(flag.project))?, "synced"),
        RecipeCommand::Update(args) => {
            let updated = app::update(ctx, &scope(args.project), args.name.as_deref())?;
            pins_reply(updated, "updated")
        }
        RecipeCommand::Rm(args) => {
            ctx.root()?;
            let removed = app::rm(ctx, &scope(args.project), &args.name)?;
            let human = format!("removed {} recipe {}\n", removed.scope, removed.name);
            Ok(Reply::new(&removed, human))
        }
        RecipeCommand::Search(args) => search(ctx, args.query.as_deref()),
    }
}

/// The global store, or with `--project` the store of the project around the working
/// directory (`not_found` when there is none).
fn scope(project: bool) -> Scope {
    if project {
        Scope::Project
    } else {
        Scope::Global
    }
}

/// `name source@ref commit7 (scope)`, one line.
fn pin_line(pin: &RecipeAdded) -> String {
    let git_ref = if pin.git_ref.is_empty() {
        "HEAD"
    } else {
        &pin.git_ref
    };
    format!(
        "{} {} @ {} {} ({})\n",
        pin.name,
        pin.source,
        git_ref,
        &pin.commit[..pin.commit.len().min(7)],
        pin.scope
    )
}

fn pins_reply(data: RecipePinsData, verb: &str) -> Result<Reply> {
    let human = if data.recipes.is_empty() {
        "no remote recipes\n".to_owned()
    } else {
        data.recipes
            .iter()
            .map(|r| format!("{verb} {}", pin_line(r)))
            .collect()
    };
    Ok(Reply::new(&data, human))
}

fn search(ctx: &Ctx, query: Option<&str>) -> Result<Reply> {
    let data = app::search(ctx, query)?;
    let rows: Vec<Vec<String>> = data
        .recipes
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.os.join(","),
                r.description.clone(),
                r.source.clone(),
            ]
        })
        .collect();
    let human = if data.recipes.is_empty() {
        "no recipes match\n".to_owned()
    } else {
        human::table(&["NAME", "OS", "DESCRIPTION", "SOURCE"], &rows)
    };
    Ok(Reply::new(&data, human))
}

fn list(ctx: &Ctx) -> Result<Reply> {
    let listing = app::list(ctx)?;
    let human = list_human(&listing.data, &listing.invalid);
    Ok(Reply::new(&listing.data, human))
}

fn list_human(data: &RecipeListData, invalid: &[String]) -> String {
    let mut out = String::from("search order:\n");
    for root in &data.roots {
        out.push_str(&format!(
            "  {:<8} {}\n",
            root.scope,
            human::visible(&root.path)
        ));
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = data
        .recipes
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.scope.clone(),
                r.commit.clone().unwrap_or_default(),
                r.description.clone(),
            ]
        })
        .collect();
    out.push_str(&human::table(
        &["NAME", "SCOPE", "COMMIT", "DESCRIPTION"],
        &rows,
    ));
    for line in invalid {
        out.push_str(&format!("{}\n", human::visible(line)));
    }
    out
}

fn show(ctx: &Ctx, name: &str) -> Result<Reply> {
    let data = app::show(ctx, name)?;
    // Every field is the recipe's own text: its control characters are shown, not sent.
    let human = human::visible_lines(&show_human(&data.recipe));
    Ok(Reply::new(&data, human))
}

fn show_human(r: &RecipeSchema) -> String {
    let mut out = format!(
        "{}  {}\nschema {}, runtime {}, reboot {}\n",
        r.name, r.description, r.schema, r.runtime, r.reboot
    );
    if !r.depends.is_empty() {
        out.push_str(&format!("depends: {}\n", r.depends.join(", ")));
    }
    for p in &r.params {
        let default = match (&p.default_from, p.default.as_str()) {
            (Some(from), _) => format!(" (default from {from})"),
            (None, "") => String::new(),
            (None, value) => format!(" (default {value})"),
        };
        let required = if p.required { " required" } else { "" };
        out.push_str(&format!(
            "param {} {}{required}{default}  {}\n",
            p.name, p.kind, p.help
        ));
    }
    for o in &r.outputs {
        out.push_str(&format!("output {}  {}\n", o.name, o.help));
    }
    if let Some(h) = &r.health {
        out.push_str(&format!("health: {} (timeout {})\n", h.check, h.timeout));
    }
    out
}

fn new(ctx: &Ctx, name: &str, os: Option<&str>) -> Result<Reply> {
    let data = app::new(ctx, name, os)?;
    let human = format!(
        "created {}\nedit recipe.toml and install.sh there\n",
        data.path
    );
    Ok(Reply::new(&data, human))
}

fn refresh(ctx: &Ctx) -> Result<Reply> {
    let data = app::refresh(ctx)?;
    let rows: Vec<Vec<String>> = data
        .files
        .iter()
        .map(|f| vec![f.path.clone(), f.status.clone()])
        .collect();
    let human = human::table(&["FILE", "STATUS"], &rows);
    Ok(Reply::new(&data, human))
}

/// `guest <subcommand>`.
pub fn guest(ctx: &Ctx, command: &GuestCommand) -> Result<Reply> {
    match command {
        GuestCommand::Ls => {
            let data = app::guests(ctx)?;
            let rows: Vec<Vec<String>> = data
                .guests
                .iter()
                .map(|g| {
                    vec![
                        g.name.clone(),
                        g.init.clone(),
                        g.default_backend.clone(),
                        g.capabilities.join(","),
                        g.source.clone(),
                    ]
                })
                .collect();
            let human = human::table(
                &["NAME", "INIT", "BACKEND", "CAPABILITIES", "SOURCE"],
                &rows,
            );
            Ok(Reply::new(&data, human))
        }
        GuestCommand::Show(args) => {
            let data = app::guest(ctx, &args.name)?;
            let human = guest_human(&data.guest);
            Ok(Reply::new(&data, human))
        }
    }
}

/// One `key: value` line per field of a guest definition; maps and lists flattened so a person
/// reads the templates without JSON punctuation (`--json` has the structured form).
fn guest_human(g: &Guest) -> String {
    let list = |items: &[String], sep: &str| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(sep)
        }
    };
    let pairs = |map: &std::collections::BTreeMap<String, String>| {
        let items: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
        list(&items, ", ")
    };
    let mut out = String::new();
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k}: {v}\n"));
    line("name", &g.name);
    line("source", &g.source);
    line("init", &g.init);
    line("shell", &g.shell);
    line("installer", &g.installer);
    line("default backend", &g.default_backend);
    line("default ssh user", &g.default_ssh_user);
    line("escalate", &list(&g.escalate, " "));
    line("capabilities", &list(&g.capabilities, ", "));
    line("aliases", &list(&g.aliases, ", "));
    line("filename hints", &list(&g.filename_hints, ", "));
    line("seed packages", &list(&g.seed_packages, ", "));
    line("pkg setup", &g.pkg.setup);
    line("pkg install", &list(&g.pkg.install, " "));
    line("pkg env", &pairs(&g.pkg.env));
    line("runtime packages", &pairs(&g.pkg.runtime_packages));
    for (verb, template) in &g.svc {
        line(&format!("svc {verb}"), template);
    }
    for (verb, template) in &g.cmd {
        line(&format!("cmd {verb}"), template);
    }
    for (backend, table) in &g.backend {
        let text = match table.as_object() {
            Some(keys) if keys.is_empty() => "none".to_owned(),
            Some(keys) => keys
                .iter()
                .map(|(k, v)| match v.as_str() {
                    Some(text) => format!("{k}={text}"),
                    None => format!("{k}={v}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => table.to_string(),
        };
        line(&format!("backend {backend}"), &text);
    }
    out
}
