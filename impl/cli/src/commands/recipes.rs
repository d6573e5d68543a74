//! Recipe and guest commands: `recipes`, `check-recipes`, `recipe list|show|new|refresh`,
//! `recipe add|lock|sync|update|rm|search` (remote recipes, core `recipes::remote` and
//! `recipes::index`), `guest ls|show` (json-v3#per-command-data, the recipe and guest
//! rows). `recipe lock --project` is `commands::project::recipe_lock`.

use stoat_core::guests;
use stoat_core::recipes::remote::{self, Store};
use stoat_core::recipes::{self, index, scaffold, Catalog};
use stoat_core::Result;
use stoat_wire::dto::{
    Guest, GuestListData, GuestShowData, IndexEntry, RecipeAdded, RecipeListData, RecipeNewData,
    RecipePinsData, RecipeRefreshData, RecipeSchema, RecipeSearchData, RecipeShowData,
};

use crate::ctx::Ctx;
use crate::grammar::{CheckRecipesArgs, GuestCommand, RecipeCommand, RecipesArgs};
use crate::human;
use crate::Reply;

/// `recipes [--os OS] [--backend B]`: what is offered (the backend does not change it).
pub fn recipes(ctx: &Ctx, args: &RecipesArgs) -> Result<Reply> {
    let data = stoat_core::app::recipes::recipes(ctx, args.os.as_deref())?;
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
    let data = stoat_core::app::recipes::check_recipes(
        ctx,
        &args.names,
        &args.os,
        args.backend.as_deref(),
    )?;
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
            let store = store(ctx, args.project)?;
            let added = remote::add(&ctx.env, &store, &args.url, args.git_ref.as_deref())?;
            let human = format!("added {}", pin_line(&added));
            Ok(Reply::new(&added, human))
        }
        RecipeCommand::Lock(flag) if flag.project => super::project::recipe_lock(ctx),
        RecipeCommand::Lock(_) => {
            let store = store(ctx, false)?;
            pins_reply(remote::lock_global(&ctx.env, &store)?, "locked")
        }
        RecipeCommand::Sync(flag) => {
            let store = store(ctx, flag.project)?;
            pins_reply(remote::sync(&ctx.env, &store)?, "synced")
        }
        RecipeCommand::Update(args) => {
            let store = store(ctx, args.project)?;
            let updated = remote::update(&ctx.env, &store, args.name.as_deref())?;
            pins_reply(updated, "updated")
        }
        RecipeCommand::Rm(args) => {
            let root = ctx.root()?;
            let store = store(ctx, args.project)?;
            let removed = remote::rm(root, &store, &args.name)?;
            let human = format!("removed {} recipe {}\n", removed.scope, removed.name);
            Ok(Reply::new(&removed, human))
        }
        RecipeCommand::Search(args) => search(ctx, args.query.as_deref()),
    }
}

/// The global store, or with `--project` the store of the project around the working
/// directory (`not_found` when there is none).
fn store(ctx: &Ctx, project: bool) -> Result<Store> {
    if project {
        Ok(Store::project(stoat_core::app::project::required(ctx)?))
    } else {
        Ok(Store::global(ctx.root()?))
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

fn pins_reply(recipes: Vec<RecipeAdded>, verb: &str) -> Result<Reply> {
    let human = if recipes.is_empty() {
        "no remote recipes\n".to_owned()
    } else {
        recipes
            .iter()
            .map(|r| format!("{verb} {}", pin_line(r)))
            .collect()
    };
    Ok(Reply::new(&RecipePinsData { recipes }, human))
}

fn search(ctx: &Ctx, query: Option<&str>) -> Result<Reply> {
    let recipes: Vec<IndexEntry> = index::search(&ctx.env, query)?;
    let rows: Vec<Vec<String>> = recipes
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
    let human = if recipes.is_empty() {
        "no recipes match\n".to_owned()
    } else {
        human::table(&["NAME", "OS", "DESCRIPTION", "SOURCE"], &rows)
    };
    Ok(Reply::new(&RecipeSearchData { recipes }, human))
}

fn list(ctx: &Ctx) -> Result<Reply> {
    let catalog = recipes::load_catalog(ctx.root()?)?;
    let data = RecipeListData {
        roots: catalog.wire_roots(),
        recipes: catalog.wire_entries(),
    };
    Ok(Reply::new(&data, list_human(&catalog, &data)))
}

fn list_human(catalog: &Catalog, data: &RecipeListData) -> String {
    let mut out = String::from("search order:\n");
    for root in &data.roots {
        out.push_str(&format!("  {:<8} {}\n", root.scope, root.path));
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
    for found in catalog.found.iter().filter(|f| f.manifest.is_err()) {
        if let Err(err) = &found.manifest {
            out.push_str(&format!("{}  invalid: {err}\n", found.key));
        }
    }
    out
}

fn show(ctx: &Ctx, name: &str) -> Result<Reply> {
    let catalog = recipes::load_catalog(ctx.root()?)?;
    let schema = recipes::show(&catalog, name)?.to_schema();
    let human = show_human(&schema);
    Ok(Reply::new(&RecipeShowData { recipe: schema }, human))
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
    let root = ctx.root()?;
    let registry = guests::registry(root)?;
    let catalog = recipes::load_catalog(root)?;
    let dir = scaffold::new_recipe(root, &registry, &catalog, name, os)?;
    let path = format!("{}/", dir.display());
    let human = format!("created {path}\nedit recipe.toml and install.sh there\n");
    Ok(Reply::new(&RecipeNewData { path }, human))
}

fn refresh(ctx: &Ctx) -> Result<Reply> {
    let files = recipes::refresh_bundled(ctx.root()?)?;
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|f| vec![f.path.clone(), f.status.clone()])
        .collect();
    let human = human::table(&["FILE", "STATUS"], &rows);
    Ok(Reply::new(&RecipeRefreshData { files }, human))
}

/// `guest <subcommand>`.
pub fn guest(ctx: &Ctx, command: &GuestCommand) -> Result<Reply> {
    let registry = guests::registry(ctx.root()?)?;
    match command {
        GuestCommand::Ls => {
            let list: Vec<Guest> = registry.all().iter().map(|g| g.to_wire()).collect();
            let rows: Vec<Vec<String>> = list
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
            Ok(Reply::new(&GuestListData { guests: list }, human))
        }
        GuestCommand::Show(args) => {
            let guest = registry.require(&args.name)?.to_wire();
            let human = serde_json::to_string_pretty(&guest).unwrap_or_default();
            Ok(Reply::new(&GuestShowData { guest }, human))
        }
    }
}
