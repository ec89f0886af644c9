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
    match emit {
        "ir" => Ok(tilebook_tir::print::print_kernel(&k)),
        "clif" => {
            let ck = tilebook_cpu::compile(&k, &tilebook_cpu::CpuOptions::default())?;
            Ok(ck.clif)
        }
        "llvm" | "ptx" | "cubin" => Err(format!(
            "tilebook: --emit {emit}{} needs the GPU backend, which is not part of this build yet\n",
            target.map(|t| format!(" (target {t})")).unwrap_or_default()
        )),
        other => Err(format!("tilebook: unknown --emit {other} (expected ir, clif, llvm, ptx or cubin)\n")),
    }
}
