//! `walkrag models`: what is installed in the models directory.

use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;
use walkrag_core::{models_dir, Catalog};

/// Inspect the models directory ($WALKRAG_MODELS, default ~/.cache/walkrag/models).
#[derive(clap::Subcommand)]
pub enum Command {
    /// List the known models: installed or not, size on disk, and whether checksums hold.
    ///
    /// Install missing ones with scripts/fetch-models.sh NAME.
    List {
        /// One JSON object per model.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct Row {
    name: String,
    installed: bool,
    /// `ok`, `missing`, or what is wrong.
    status: String,
    bytes: u64,
    path: String,
    default: bool,
    license: String,
    description: String,
    /// The int8 kernels local models run on here (see `walkrag bench llm`), or why none.
    cpu: String,
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    let Command::List { json } = command;
    let catalog = Catalog::builtin();
    let cpu = match walkrag_models::local::cpu() {
        Ok(cpu) => cpu.name().to_string(),
        Err(e) => format!("error: {e}"),
    };
    let rows: Vec<Row> = catalog
        .models
        .iter()
        .map(|model| {
            let dir = model.dir();
            let installed = dir.is_dir();
            let status = if installed {
                verify(&dir, model)
            } else {
                "missing".to_string()
            };
            Row {
                name: model.name.clone(),
                installed,
                status,
                bytes: if installed { dir_size(&dir) } else { 0 },
                path: model.main_path().display().to_string(),
                default: model.default,
                license: model.license.clone(),
                description: model.description.clone(),
                cpu: cpu.clone(),
            }
        })
        .collect();
    if json {
        for row in &rows {
            println!("{}", serde_json::to_string(row)?);
        }
    } else {
        println!("models directory: {}", models_dir().display());
        println!("CPU kernels: {cpu} (WALKRAG_CPU=avx512|avxvnni|avx2|scalar forces one)");
        println!("{:<20} {:<10} {:>9}  description", "name", "status", "size");
        for row in &rows {
            let size = if row.installed {
                format!("{:.1} MB", row.bytes as f64 / 1e6)
            } else {
                "-".into()
            };
            println!(
                "{:<20} {:<10} {:>9}  {}",
                row.name, row.status, size, row.description
            );
        }
        if rows.iter().any(|r| r.status != "ok") {
            println!("\nInstall or repair with: scripts/fetch-models.sh NAME");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks every catalogued file of `model` in `dir`: `ok`, or the first problem found.
fn verify(dir: &Path, model: &walkrag_core::CatalogModel) -> String {
    for file in &model.files {
        let path = dir.join(&file.path);
        let Ok(meta) = std::fs::metadata(&path) else {
            return format!("missing {}", file.path);
        };
        if file.bytes.is_some_and(|b| b != meta.len()) {
            return "bad-size".to_string();
        }
        match walkrag_core::sha256_file(&path) {
            Ok(sum) if sum == file.sha256 => {}
            Ok(_) => return "bad-sha256".to_string(),
            Err(_) => return "unreadable".to_string(),
        }
    }
    "ok".to_string()
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
