//! `tilebook compile`: lower one specialization of a kernel ahead of time and
//! print one of its stages.

use tilebook_frontend::SourceFile;

pub fn compile(
    file: &str,
    kernel: &str,
    signature: &str,
    emit: &str,
    target: Option<&str>,
) -> Result<String, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("tilebook: cannot read {file}: {e}\n"))?;
    let source = SourceFile::new(file, text);
    let k = tilebook_frontend::aot::lower_file(&source, kernel, signature)?;
    let launch = tilebook_frontend::kernel::parse_signature_options(signature);
    match emit {
        "ir" => Ok(tilebook_tir::print::print_kernel(&k)),
        "clif" => {
            let ck = tilebook_cpu::compile(&k, &tilebook_cpu::CpuOptions::default())?;
            Ok(ck.clif)
        }
        "llvm" | "ptx" | "sass" => {
            let target = tilebook_nvptx::parse_target(target.unwrap_or("sm_90"))
                .map_err(|e| format!("tilebook: {e}\n"))?;
            let options = tilebook_nvptx::GpuOptions {
                maxnreg: launch.maxnreg,
                ..tilebook_nvptx::GpuOptions::new(&target, launch.num_warps, launch.num_stages)
            };
            let g =
                tilebook_nvptx::compile(&k, &options).map_err(|e| format!("tilebook: {e}\n"))?;
            if std::env::var("TILEBOOK_TIME_STAGES").is_ok_and(|v| v == "1") {
                for (stage, secs) in &g.stage_seconds {
                    eprintln!("[tilebook] {stage}: {:.1} ms", secs * 1e3);
                }
                eprintln!("[tilebook] dynamic shared memory: {} bytes", g.shared_bytes);
            }
            match emit {
                "llvm" => Ok(g.llvm_ir),
                "ptx" => Ok(g.ptx),
                _ => {
                    let s = tilebook_nvptx::sass::sass(&g.ptx)
                        .map_err(|e| format!("tilebook: {e}\n"))?;
                    Ok(format!(
                        "// ptxas -v:\n// {}\n{}",
                        s.resources.replace('\n', "\n// "),
                        s.text
                    ))
                }
            }
        }
        other => Err(format!(
            "tilebook: unknown --emit {other} (expected ir, clif, llvm, ptx or sass)\n"
        )),
    }
}
