//! The `tracelens` binary: `lsp`, `check`, `trace`, `repro` and `run` over the engine
//! (shared/spec/cli.md).

mod allocator;
mod analysis_stack;
mod check;
mod config;
mod files;
mod graph;
mod lsp;
mod render;
mod run;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "tracelens", version, about = "Traces Python programs the way jax.jit would, without running them")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Trace every Python file under the paths and print diagnostics.
    Check {
        /// Files or folders (default: the current folder).
        paths: Vec<PathBuf>,
        /// text, json, sarif, or github (workflow annotations); `--output-format` is the same
        /// flag, as ruff spells it.
        #[arg(long, visible_alias = "output-format", value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Colour: auto (only on a terminal), always, never.
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// Also evaluate each program on the CPU and report the first NaN/Inf (TL301).
        #[arg(long)]
        values: bool,
        /// Report only these codes or prefixes (comma separated: TL1,TL201); replaces
        /// `select` of pyproject.toml.
        #[arg(long, value_delimiter = ',', value_name = "CODES")]
        select: Option<Vec<String>>,
        /// Never report these codes or prefixes; added to `ignore` of pyproject.toml.
        #[arg(long, value_delimiter = ',', value_name = "CODES")]
        ignore: Vec<String>,
        /// Read the source from standard input and report it as PATH (imports resolve from
        /// PATH's folder, pyproject.toml is found from there).
        #[arg(long, value_name = "PATH")]
        stdin_filename: Option<PathBuf>,
        /// Exit 0 even when errors are found (2 still means bad usage or an internal failure).
        #[arg(long)]
        exit_zero: bool,
    },
    /// Run FILE as `python FILE` would, on tracelens' interpreter and CPU kernels.
    Run {
        file: PathBuf,
        /// Arrays with more elements than this are not computed.
        #[arg(long, default_value_t = 4_000_000)]
        max_elements: u64,
        /// Stop the run after this many seconds of CPU time.
        #[arg(long, default_value_t = 30.0)]
        max_seconds: f64,
        /// Colour of tracelens' own findings on stderr: auto, always, never.
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
        /// The program's arguments.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Speak the Language Server Protocol on stdin/stdout.
    Lsp {
        /// Accepted for clients that pass it (stdio is the only transport).
        #[arg(long)]
        stdio: bool,
    },
    /// Write a standalone pure-JAX program that re-raises the error at LINE of FILE, or
    /// (with --function) that stages out every traced call of a function.
    Repro {
        file: PathBuf,
        #[arg(long, required_unless_present = "function", conflicts_with = "function")]
        line: Option<u32>,
        /// Stage out every traced call of this function, even when nothing fails.
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
        /// Where to write it (default: standard output).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Write the program as emitted, without delta debugging it.
        #[arg(long)]
        unreduced: bool,
        /// Arrays with at most this many elements whose values are known are written as
        /// literals; larger ones as np.ones (default 128, or `reproducer-fake-array-threshold`
        /// in pyproject.toml).
        #[arg(long, value_name = "N")]
        fake_array_threshold: Option<u64>,
    },
    /// Print every traced function: its traces, argument and result avals, retrace causes
    /// and the jaxpr-like body.
    Trace {
        file: PathBuf,
        /// text and json: the traces; dot and svg: the traced computation as a dataflow graph
        /// (svg needs Graphviz's `dot` on PATH).
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        format: TraceFormat,
        /// Only the traces of this function (dot and svg).
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
        /// Evaluate the program on the CPU too, and mark the equations on the line of the first
        /// NaN/Inf (TL301) in the graph.
        #[arg(long)]
        values: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...,line=...::message`).
    Github,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TraceFormat {
    Text,
    Json,
    Dot,
    Svg,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    tracer_core::interp::memory::set_memory_probe(tracer_core::interp::memory::counted_thread_bytes);
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    allocator::manage_freed_memory(allocator::DEFAULT_PURGE_DELAY_MS);
    let code = match cli.command {
        Command::Check { paths, format, color, values, select, ignore, stdin_filename, exit_zero } => {
            let color = match color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => std::io::stdout().is_terminal(),
            };
            check::run_check(paths, check::CheckOptions { format, color, values, select, ignore, stdin_filename, exit_zero })
        }
        Command::Run { file, max_elements, max_seconds, color, args } => {
            let color = match color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => std::io::stderr().is_terminal(),
            };
            allocator::manage_freed_memory(allocator::KEPT_PURGE_DELAY_MS);
            run::run_program(file, args, run::RunOptions { max_elements, max_seconds }, color)
        }
        Command::Lsp { .. } => {
            allocator::manage_freed_memory(allocator::KEPT_PURGE_DELAY_MS);
            lsp::run()
        }
        Command::Repro { file, line, function, output, unreduced, fake_array_threshold } => {
            let options = check::ReproOptions { unreduced, fake_array_threshold, function: None };
            match (line, function) {
                (_, Some(function)) => check::run_repro_function(file, &function, output, &options),
                (Some(line), None) => check::run_repro(file, line, output, &options),
                (None, None) => ExitCode::from(2),
            }
        }
        Command::Trace { file, format, function, values } => check::run_trace(file, format, function, values),
    };
    allocator::keep_freed_memory_until_exit();
    code
}
