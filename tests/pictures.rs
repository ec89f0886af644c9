//! The pictures of `tilebook.trace` (CPU backend): the tile visiting order
//! of the tutorial matmul, row-major against grouped, with the first wave's
//! input footprint, and the mask view of vector addition's last program.

use tilebook_session::Output;
use tilebook_tests::{golden_source, ok, session};

/// The display bundles of a cell's output.
fn displays(r: &tilebook_session::CellResult) -> Vec<Vec<(String, String)>> {
    r.outputs
        .iter()
        .filter_map(|o| match o {
            Output::Display { data } | Output::Result { data } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

fn mime<'a>(d: &'a [(String, String)], m: &str) -> &'a str {
    d.iter()
        .find(|(k, _)| k == m)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

const TRACE_MATMUL: &str = r#"
import tilebook
M = N = 288
K = 64
a = torch.randn((M, K), dtype=torch.float16, device='cuda')
b = torch.randn((K, N), dtype=torch.float16, device='cuda')
c = torch.empty((M, N), dtype=torch.float16, device='cuda')
def traced(group):
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    return tilebook.trace(matmul_kernel[grid], a, b, c, M, N, K, a.stride(0), a.stride(1),
                          b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                          BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32,
                          GROUP_SIZE_M=group, ACTIVATION='')
"#;

#[test]
fn visiting_order_shows_grouped_tiles_and_their_smaller_footprint() {
    let mut s = session();
    ok(&mut s, &golden_source("matmul.py"));
    ok(&mut s, TRACE_MATMUL);
    let row_major = s.run_cell("traced(1).visiting_order(c, wave=9)");
    assert!(row_major.ok, "{}", row_major.text());
    let text = row_major.text();
    let lines: Vec<&str> = text.lines().collect();
    // The first wave (9 programs) in brackets: the whole first tile row.
    assert_eq!(lines[1], "[ 0][ 1][ 2][ 3][ 4][ 5][ 6][ 7][ 8]", "{text}");
    // One row of A tiles and nine columns of B tiles: 32x64 and 64x288 fp16.
    assert!(
        text.contains("the first 9 programs [in brackets] load a_ptr 4.0 KB, b_ptr 36.0 KB"),
        "{text}"
    );
    let grouped = s.run_cell("traced(3).visiting_order(c, wave=9)");
    let text = grouped.text();
    let lines: Vec<&str> = text.lines().collect();
    // Grouped: the first wave is a 3x3 block of tiles.
    assert_eq!(lines[1], "[ 0][ 3][ 6]  9  12  15  18  21  24", "{text}");
    assert_eq!(lines[2], "[ 1][ 4][ 7] 10  13  16  19  22  25", "{text}");
    assert!(
        text.contains("the first 9 programs [in brackets] load a_ptr 12.0 KB, b_ptr 12.0 KB"),
        "{text}"
    );
    let d = displays(&grouped);
    let svg = mime(&d[0], "image/svg+xml");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect").count(), 81, "one rectangle per tile");
    assert_eq!(
        svg.matches("stroke=\"#d62728\"").count(),
        9,
        "the wave outlined"
    );
    if let Ok(dir) = std::env::var("TILEBOOK_PICTURES_OUT") {
        std::fs::write(format!("{dir}/visiting-order.svg"), svg).unwrap();
    }
    // The traced launch really computed the product.
    let out = ok(
        &mut s,
        "print(torch.allclose(c.float(), a.float() @ b.float(), atol=1e-1, rtol=1e-2))",
    );
    assert_eq!(out, "True\n");
}

#[test]
fn mask_view_shows_which_lanes_the_mask_blocked() {
    let mut s = session();
    ok(&mut s, &tilebook_tests::golden_source("vector_add.py"));
    let r = s.run_cell(
        "import tilebook\nimport torch\nx = torch.rand(200, device='cuda')\ny = torch.rand(200, device='cuda')\nout = torch.empty_like(x)\nt = tilebook.trace(add_kernel[(4,)], x, y, out, 200, BLOCK_SIZE=64)\nt.mask_view(pid=3)",
    );
    assert!(r.ok, "{}", r.text());
    let text = r.text();
    // 200 = 3 * 64 + 8: the last program has 8 live lanes of 64.
    assert_eq!(text.matches("8 of 64 lanes active").count(), 3, "{text}");
    assert!(
        text.contains(&format!("  {}{}", "█".repeat(8), "·".repeat(56))),
        "{text}"
    );
    let d = displays(&r);
    let svg = mime(&d[0], "image/svg+xml");
    // Three sites of 64 lanes: 8 coloured and 56 grey each.
    assert_eq!(svg.matches("fill=\"#dddddd\"").count(), 3 * 56);
    assert_eq!(svg.matches("fill=\"#1f77b4\"").count(), 2 * 8);
    assert_eq!(svg.matches("fill=\"#2ca02c\"").count(), 8);
    if let Ok(dir) = std::env::var("TILEBOOK_PICTURES_OUT") {
        std::fs::write(format!("{dir}/mask-view.svg"), svg).unwrap();
    }
    ok(&mut s, "print(torch.allclose(out, x + y))");
    let r = s.run_cell("t.mask_view(pid=(9,))");
    assert!(!r.ok && r.text().contains("made no loads or stores"));
}

#[test]
fn heatmap_draws_values_and_refuses_what_it_cannot_draw() {
    let mut s = tilebook_tests::session();
    let r = s.run_cell(
        "import torch, tilebook\ntilebook.heatmap(torch.arange(6).reshape(2, 3), title='six', values=True)",
    );
    assert!(r.ok, "{}", r.text());
    let bundle = r
        .outputs
        .iter()
        .find_map(|o| match o {
            tilebook_session::Output::Display { data } => Some(data.clone()),
            _ => None,
        })
        .expect("a display");
    let svg = &bundle.iter().find(|(m, _)| m == "image/svg+xml").unwrap().1;
    assert!(svg.starts_with("<svg") && svg.contains("six"), "{svg}");
    assert_eq!(svg.matches("<rect").count(), 6, "{svg}");
    assert!(svg.contains("<title>[1, 2] = 5</title>"), "{svg}");
    let text = &bundle.iter().find(|(m, _)| m == "text/plain").unwrap().1;
    assert_eq!(text, "six\n :=\n+#@\n2 x 3; ' ' = 0, '@' = 5", "{text}");
    for (cell, message) in [
        (
            "tilebook.heatmap(torch.zeros(2, 2, 2))",
            "one or two dimensions",
        ),
        ("tilebook.heatmap(torch.zeros(70000))", "1 to 65536 cells"),
        ("tilebook.heatmap([1, 2])", "pass a tensor"),
    ] {
        let r = s.run_cell(cell);
        assert!(!r.ok && r.text().contains(message), "{cell}: {}", r.text());
    }
}
