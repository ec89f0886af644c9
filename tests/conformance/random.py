# Counter-based random numbers: tl.randint4x / tl.randint / tl.rand /
# tl.randn / tl.philox against numbers Triton 3.6 produced on an H100 for the
# same seeds and offsets (tests/gpu/reference/philox.py made the table
# below), plus the Philox-4x32-10 known-answer vectors of its authors.
# Every word must match bit for bit, tl.randn's too: it goes through
# log/sqrt/sin/cos, which both backends compute as the GPU does.

PHILOX_REFERENCE = [
    (0, 0, [
        "6627e8d5 f8e4cca4 04faa329 c990ef29 ef3dc354 734893fb b6af4bf8 a8b31d31 3fc6a964 96e901bc d777ce6a a0f5ea82 a5499d50 5adf645f 0852a6d0 a2e87675 9561b015 6b266ee3 1a936218 a0f814d1 5315108d 63b55bfe 7a0c604c 717f0a8a 35dc20a6 1a774e19 f244f6e5 6c2bcd8c b5911f3c 018307c0 7c5853f8 a20aa267 aa9aa72f f6b6215b 770f2163 fcdbc0f3 99e64951",
        "e169c58d 5cb200db 51c732a6 6a4474a6 b193f16e 071a9632 ceb08c33 0ae45c73 a08e039c 2ada33ba d0d35eaa 09b0ee92 40658c3b 96b57493 0915198e e334dc0c 676ac14f 1a2236b2 813c3777 39c3d6cd a3362e95 1a5fa621 9a78bff9 e69a1d40 943d3e14 6548028c 7508292b 156c49b7 8dfa6414 6d5ed401 ca1b04fc 9f342d0e 9c896b04 e47d8675 e66f30bf b432b65f 8b658cf2",
        "bc57ac4c b1a574eb 241513ad 9ac9134f f12f66bc ab97539a d462db1c b856e2f8 f0d30bd2 f27a9b3d 2b288786 ece2dffb 23b6e8b2 67689ef6 84b96593 b621b3c3 ef3f4b08 776abcf7 8bd8d5d0 039b1473 a9d62e82 f772fa9b ebd8a2d2 fca1ca63 8d1b5939 bdbce723 6cd145a6 aa1b98b7 8ed2fa6e 47ad90e0 6081223c 9049ce04 9571342c f9b7e1fb 5897d929 c080769d 63775e30",
        "9b00dbd8 097eff67 459135e4 6d413e04 eabefd5a 5affd9e7 08d74fa0 73ddf25e d7fe9a1b 1b02f0d2 c900248e d275235f f41878e7 b699bffa 114d8a7d 03186e9f d057e38e 8750a017 2a7af4a6 9a3270c8 cd248843 e979d290 8f7e55d9 c165a2b7 ea645e4e ec27188a d6d26099 8a0dc21e 36c708c7 d4a64a5b f43656cd a73fe698 3b95de8f 79911ff5 27ab53e1 6173f26a df77ca1b",
        "3f4c4fd1 3d63666a 3d1f5464 3ed9bc42 3e0611e4 3f669127 3f12a167 3f2e99c5 3eff1aa5 3f522dfc 3ea220c5 3f3e142a 3f356cc4 3f35bec8 3d852a6c 3f3a2f12 3f553c9f 3f564cdd 3e549b10 3f3e0fd5 3f262a20 3f476ab7 3f7418c0 3f62fe14 3ed77082 3e53ba70 3ddbb091 3f58579a 3f14ddc1 3c4183df 3f78b0a7 3f3beaba 3f2acab1 3d949de9 3f6e1e42 3cc90fc2 3f4c336c",
        "3d3eacd1 bec6d74d bfd1a86a 3f21ac0c bfc41637 3edc1fc1 bf4afe11 3f40b457 bd03a480 bea34f12 bf839632 3f2f9d16 bf54678f 3ebaa7ad 400700dd 3e001881 3e5c764d 3e2d6b8a 3fe28bd8 bf3c6551 be157854 3e455be9 3da967c2 3e1feaad 3f37d642 3ee908cf 3fe833f4 3e9365bf 3f4e3da7 3fe8b79b be58c675 3cfbb2e3 3e1bddd9 3f00342a 3df216a1 c011d5d6 3f11e5c3",
    ]),
    (123, 0, [
        "11237cdc a3c0144e 2c1b5aa5 1e66d4d6 c5529cea 64f2adae 05b89ae2 308f4a2f 7433e6ff 4e899bf9 00ebba72 55851526 d252db9f 6b2629de aa50f942 4ae120b3 3158fd57 62e32ca5 d537a9ce 876195e7 bda212fd c3ba7052 299cf301 63bd1981 4912e73a b361bab5 58f532fc 165437da f103a9cc 407a1a75 bf3d70dc f277990b 98abf023 f3d5a104 d7d9a852 9d50ae2a 645fd711",
        "66ff3dd8 7d401ead 401e267d 1ff2fa2a 5ab62aec b4d1b229 d59f5ebf 6099ee70 4f3ecab9 1a2687e2 2363c191 6fb11329 730ad5c1 a0b63f38 9c04645b 173d54e0 29e6e7c8 60917bba f74300ff 4eac940d 43113eac 50094375 660bd70b 7ebbe2bc 82971796 a5870727 34c8b27a b48733d8 4a63fd24 26ccd9ad ce4b50c2 300877d3 f25d2d68 7921939c 61c598e7 18fb1d60 9150ebd2",
        "bfb09d90 34d6591e b2ef73a1 d99e045b 2b552382 64ab6ecc 5f646ab4 4a4950c3 69600298 05cda532 da6cca90 e7bfec75 f2943b14 3f06d7dc ee4621cd db303df3 85d7b786 616325bb 80eca7a0 28a6bbeb 35781bf9 0795655b 5bbee3e3 38684c58 70578673 02a9eb0d 3377c8ca d445cf42 58444477 2c0c1684 97f90dbc 5d709016 5ad34e40 36d682ac 4b2780d8 7fb30471 3610812a",
        "30db7e52 de0ecdaf f88dcd49 d9a8074b d8f8c1c3 7e4ca824 4af84803 d9770504 46bbf1c4 e262531f c128cf09 2e18fc1f 3a9d5760 ad3cda9d a1140d76 0bdf919a a94e9ecb 9d965af0 9282de70 2d280834 2d883611 13f2d835 434768d0 4b6f0f9c 97ac3805 6b958473 585a4e08 000ebb4b 1969ce75 46d48a67 46013e3c 62d9a540 53f570ab da9d5720 fc8a3f45 686dea1c 60c74593",
        "3e091be6 3f387fd6 3eb06d6a 3e7336a6 3eeab58b 3f49e55a 3d37135b 3ec23d28 3f6867cd 3f1d1337 3bebba71 3f2b0a29 3eb6b491 3f564c53 3f2b5e0c 3f15c240 3ec563f4 3f45c658 3eab2158 3f713cd3 3f04bbd9 3ef1163e 3ea673cb 3f477a32 3f1225cd 3f193c8a 3f31ea65 3e32a1be 3defc562 3f00f434 3f01851d 3dd8866e 3f4ea81f 3dc2a5ef 3ea0995e 3f455ea3 3f48bfad",
        "3f2ce0be 3f4d4fce bfbad7d8 3b8abecd bea42598 bf167fc2 bf9b9f13 3d284c71 bea4ff57 3e8f5160 bf0532cd 3f2017b3 3f93d1fa bcaaae48 3e323aa3 3edd0833 bf251d8c 3ca4259f 3fac554e be84a1a0 bf910c2e bf5dc676 3ee077dc 3f347b12 3f866fa7 be8b0551 bf3a1da3 bfca4474 bfe75ed7 bec4738c bf643e77 bfc02df3 3f036098 40030818 3e0773c5 3e7976c1 3eeba137",
    ]),
    (-7, 1000, [
        "7b0efd01 46549171 6cba61c7 87c6f089 28822a4b 78a5d923 3e453871 96a3da0a 97d2af1e 24a3f756 519ab6ab 89da79ad 4818931f 032d8754 bf2f228c 173cc715 68c127ee c2e83e6c c7818287 9d993a83 0e12d57d a65451d9 aba7dfb1 72c87fd1 5a2297cb 311595aa 1a5ed0bc 5840e86a 0cb81105 aee4188e 0a9eab5e eae69a3c 953f91b5 c8354743 fe086ebd be72c64e 5fc64200",
        "ac228a93 4f32414d 441597cf bb3bbfbe 786d1858 55819a3d 96e375d3 0b2cb81d ee8d02df 93e40837 efdfff6c 6525d007 647ed8f8 4c015911 8088aa38 f53e99aa 16767cdb 578c402a 0157b74c 6dedcbb6 c3925421 3f7beabe 079e2589 f5b75007 c5ae27e6 891b9cf6 e6186574 06dcdda9 1d7646bc 8a7b4fd1 b2c4cd19 2a0b7c71 26e19b1a e3f07f1f 3980e4d5 0b26125b 3f13610c",
        "fc0978b1 70eacae1 bc4df671 1398e136 d87372bf c080c282 654e8146 e9bf9f44 a1529019 b69b54eb e7129080 d8118605 7c4425f2 89d646f7 b2bbc0a4 95652afe 52f4a6da 9d29a7a3 35e3903a 1b5438cc 7111d11b efbbb049 14c1fb5a 5cb1f6dc fd8195d4 8bdcbec8 04e3f18e 9af63d98 67a03290 4a2d88d6 9b109b7d 6189f219 dd0c6e9d 9bfb3775 ec633e22 bb2c44c3 159d1306",
        "8b5b5a41 e2914d1a 949ebfbe 16327050 10eac8af 64a7d056 f14454a8 9cf9291e 394457ca 36426f09 901b772f 8aa85d9e 639929fb 25e6ae74 4f896cb7 d9050ced 0979204d 3bd6880d e1f05b63 8680c7e2 611487ed de667214 ddd03d9d 0c894f43 a0c8b0d3 f153111e 1d38f640 dc55bf0f 328717cf 7b5a00a4 9d68bfb6 8622c88c 4e500c07 f2a7a426 54a76939 9d7a7f67 30daadef",
        "3f761df9 3f0ca922 3f5974c3 3f70721e 3ea208a8 3f714bb1 3ef914e1 3f52b84b 3f505aa1 3e928fdc 3f23356c 3f6c4b0c 3f103125 3ccb61d4 3f01a1ba 3e39e638 3f51824f 3ef45f05 3ee1f9f5 3f44cd8a 3de12d57 3f33575b 3f28b040 3f6590ff 3f34452f 3ec45656 3e52f685 3f3081d0 3dcb810f 3f2237ce 3da9eab5 3e28cb2d 3f5580dc 3edf2ae2 3c7bc8a0 3f031a72 3f3f8c83",
        "be21379d bf4dc316 bf0f5177 beb0581e 3fb4e687 be2d8326 3f04e9aa 3f084b2d 3ed73efb 3f62c297 3f2ab376 3dccf04f 3e7028de c010a6ba 3f954614 3fcc423b 3e9244e8 befb03ca 3fa35a9b 3eea8e5a c0046bf4 bf57e8d7 3f59aa4a 3ed138fb bf4e1fdc 3f9fcdc7 3f0620d3 3f5059de 3e88b7c5 3f54e11b bfe37415 bf661744 be4c7881 3e7d9a3d c02f9f76 3f7ce8b0 bf42c653",
    ]),
    (1099511627781, 2147483628, [
        "2d2d023d 91c5be19 7c36c537 9f221cc5 e2cb6bf3 62c83fe6 e3e5b169 6b554ef3 d782f069 7c33aa68 3729a21a 9ba4d39c 202a2dc7 9a0f618b 4430a56d b702429b 25d58f37 712d7a87 e843caa1 2823e190 c576ba84 a37d8cf6 e703357c 46edf584 18252159 8b257f73 ba0e7f34 b08b228c b2b2115d 31dfbbc6 babff70d 32bc2f58 6a4b94df 7076be09 dd5d4da8 93084673 988f7d4d",
        "eb8c4461 bf1679e3 10da654e 13e1e37c 41aea928 73c1804b 537163c9 971a46d8 6814f4a9 954f1494 d5d67361 b4827e4f 6909de34 2d14f893 150412a7 163ab65f feaf3ca1 3f524aa5 3e6c8713 fb760698 6b6f6884 5a18e7bb b5a00a1f 570181db ed221f30 f9c2f124 7e2a295a fd9ce564 9ad83372 a4e9b230 6a7ce7d1 7290ac5d 2cc3f292 d27e0ec8 1bc43cb8 267e16a0 8465c788",
        "3692567a c8c6cb76 9a287fa2 153b839b 64af2820 0b6c67a3 9076dbc1 eba09a99 89b29739 b1edb122 21e2cda1 ac955930 c58634f1 f507f423 58801b4e 17013134 b2ffb2e8 574f3b0f f4445d3c 8072fe5c 80a9152e 51eedabe 310fb24c 1822b5ab 653450bd 0f41fa82 98951f83 d18ff53a 0110b331 222fbe7d 16cfa18f d7b93b44 d1cee8e9 bbd0bbdc a54b22a3 bdfc9383 66990f85",
        "ba45c180 7172ccb9 0f3bd608 3c57187c 22aa7874 0d18a22d 1dfacb0e 980e2629 7c80acd3 4173dc73 0e3e7962 152314e8 2f73442b 642ee974 e0436005 080d833f 3921f049 5044f122 26d19b9b d76ce393 3ac22772 1c40f0ae fc12050a 88a95022 ec791af5 fbcd9fe4 869bc32f 524eaa69 fef28326 25308337 97a98482 00fcc36a ae7ec334 576844d6 bb0f64d8 7295dfe9 3cb33be4",
        "3eb4b408 3f5c7483 3f786d89 3f41bbc5 3e69a49f 3f45907f 3e60d274 3f56aa9d 3ea1f43d 3f786754 3edca687 3f48b658 3e80a8b6 3f4be13c 3f08614a 3f11fb7a 3e97563c 3f625af4 3e3de1aa 3ea08f85 3eea2515 3f3904e5 3e47e653 3f0ddbea 3e41290a 3f69b500 3f0be301 3f1ee9ba 3f1a9bdc 3ec77eee 3f0a8011 3ecaf0bc 3f549729 3f60ed7b 3e8a8ac8 3f59ef72 3f4ee104",
        "3f466614 bf0bd5c0 3e29da0e 3ed632ed bfdb4bfc 3f17fe22 bf80daa6 3e80868c 3f16148b 3dfbdc68 bf1ee837 bf16eb3a 3f36a47c becee9b3 3f138221 3efa6867 3fc76dcb befde073 bfea4764 3fbe1db9 3f2a763a be6bc63b bfca020f beedb820 3f8c7dbf 3ed063b3 3f8c272a 3f784804 3e80bd56 bea7e375 3f0bb786 3f899f61 beb70796 bea052a9 3eaacc2b be360e7b 3f233a01",
    ]),
    (99, 8589934595, [
        "2518cd09 fd75798a 5aca6e6f e4780e91 d99c30b0 71a89c0d eba91b96 bbd0fa82 ac9b0c19 61b7af2f f61c2e05 3fcda771 d77527dc 3c6cfec6 9e5a440e b499574f 17a5c5e3 60f608c3 b8ce26a6 f0c54640 e10dc547 9cb09a41 4787d544 87dca89d 06046901 e8ce6208 2c4d1937 6d832147 61ab1b80 b6feb555 38e68598 12fe0dde 0e964487 4bea5f13 88ad2350 9a57debe 4584d30c",
        "cc165e19 9b2be06d d35a70d6 30c7c251 f687c157 6d2e5669 bdaccd0e 2e0fbaa3 b7a17995 a62d0195 a1883b90 d62fd54d a4813fea 903dcae9 7c0af62d d83ccebb 9f50f576 810c6040 25fb1c83 b9730351 0631da82 82a46ba6 556900a8 6b36f292 1e494040 e71c0245 a00dd011 db27f107 5aa12268 76f85a67 4ea32b2e 3e4df9a6 f4ee3738 80afe644 9db82216 c3acde75 60d58c6c",
        "9542a9b4 f3764af0 ca8da2f4 a472f77d 47f84b98 f81e8cf8 a39eae42 7778987c 3bbb5116 f6ccd2b3 6a228ba1 d680947d 9ed51098 068347c8 92aa1744 a7543a29 d87cc9a2 54528ca8 4a322ef8 9cf17d5e 7f000c05 b79f6c54 0cc52c92 0bd2250d 2d2cfb49 b4ddae58 20c885db da1caad9 5a839fed 13d93260 744c00bd 642bd75d f56bc2dd 91a03915 6c3c4078 92d9e293 8f059aa7",
        "276ce824 00ccfbde 5ac1d491 ad6ffd77 ace14b5b 78eaca2d 7e0e93cb 92950df9 4d7e0a46 15faa9c9 f33fd2b0 beae5041 5ccedea7 9d83995b e812cf9f 194f7f8b c836f3d7 8ea78a60 839bd32b 572f1a28 2fc8d356 c387e616 371ca71c 0aefb278 bc4f87ab bb6f9002 381495c8 d218a58b d2f6fb3e c9e615e9 734fe1af 505dd8ae e9f350c0 2db6cc3a 5561d785 ad6eaf0d 522843c8",
        "3e946333 3ca2a19c 3f3594dc 3e5c3f8a 3e998f3c 3f635137 3e22b722 3f085e0a 3f26c9e7 3f436f5d 3d9e3d1f 3eff369d 3ea22b60 3ef1b3fa 3f434b77 3f16cd50 3e3d2e2e 3f41ec11 3f0e63b2 3df3ab9b 3e7791d5 3f469eca 3f0f0faa 3f7046ae 3d408d1f 3e398cef 3eb13464 3f5b0642 3f435636 3f120294 3ee39a15 3e17f06e 3de96447 3f17d4bd 3f6ea5b8 3f4b5042 3f0b09a5",
        "bfa7051f 3f284cba bef6d72a bfa4a25f 3fb19188 3e9676af bff3e9fc bf36f149 bf59420d be609e9b be2e1e5a bf0bf3d8 beaa4998 3f5b2659 3f38cf91 bec3e355 3d7c9bba 3f3e89f9 bea07cac bffa93cd 3fcdcc0f 3f34da0a bf092efc 3e3eba6e 3e54c704 3f21cbee bb7ce05b be06b903 be443fea 3f751233 bf7564f0 bff92d3d 3fe459f9 3f82c336 3d2b745e bf2af7fc 3d39447b",
    ]),
]


@triton.jit
def draw(out, seed, base, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = i + base
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out + 0 * n + i, a.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 1 * n + i, b.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 2 * n + i, c.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 3 * n + i, d.to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 4 * n + i, tl.rand(seed, offs).to(tl.int32, bitcast=True), mask=m)
    tl.store(out + 5 * n + i, tl.randn(seed, offs).to(tl.int32, bitcast=True), mask=m)


N = 37
for seed, base, rows in PHILOX_REFERENCE:
    out = torch.zeros(6 * N, dtype=torch.int32, device=DEVICE)
    draw[(triton.cdiv(N, 16),)](out, seed, base, N, BLOCK=16)
    got = [[v & 0xFFFFFFFF for v in row] for row in out.reshape(6, N).tolist()]
    want = [[int(w, 16) for w in row.split()] for row in rows]
    for k, name in enumerate(["randint4x[0]", "randint4x[1]", "randint4x[2]", "randint4x[3]", "rand", "randn"]):
        for j in range(N):
            assert got[k][j] == want[k][j], f"{name} seed={seed} offset={base}+{j}: {got[k][j]:08x}, Triton {want[k][j]:08x}"


# Known-answer vectors of Philox-4x32-10 (counter, key) -> output.
@triton.jit
def philox_words(out, c0, c1, c2, c3, seed):
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3)
    tl.store(out + 0, a.to(tl.int32, bitcast=True))
    tl.store(out + 1, b.to(tl.int32, bitcast=True))
    tl.store(out + 2, c.to(tl.int32, bitcast=True))
    tl.store(out + 3, d.to(tl.int32, bitcast=True))


def signed(v, bits):
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


for ctr, key, want in [
    ((0, 0, 0, 0), (0, 0), "6627e8d5 e169c58d bc57ac4c 9b00dbd8"),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), "408f276d 41c83b0e a20bc7c6 6d5451fd"),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), "d16cfe09 94fdcceb 5001e420 24126ea1"),
]:
    out = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    philox_words[(1,)](out, *[signed(c, 32) for c in ctr], signed(key[0] | key[1] << 32, 64))
    got = " ".join(f"{v & 0xFFFFFFFF:08x}" for v in out.tolist())
    assert got == want, f"philox{ctr} key {key}: {got}, want {want}"


# Scalars and constexpr seeds; rand in [0, 1), randn's moments; ragged blocks.
@triton.jit
def moments(out, n, SEED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    u = tl.rand(SEED, offs)
    z = tl.randn(SEED, offs)
    tl.store(out + offs, u, mask=m)
    tl.store(out + n + offs, z, mask=m)
    first = tl.rand(SEED, tl.program_id(0))
    tl.store(out + 2 * n + tl.program_id(0), first)


n = 20001
out = torch.zeros(2 * n + triton.cdiv(n, 512), device=DEVICE)
moments[(triton.cdiv(n, 512),)](out, n, SEED=7, BLOCK=512)
u, z = out[:n], out[n:2 * n]
assert float(u.min()) >= 0.0 and float(u.max()) < 1.0, "tl.rand outside [0, 1)"
assert abs(float(u.mean()) - 0.5) < 0.01, f"tl.rand mean {float(u.mean())}"
assert abs(float(z.mean())) < 0.03 and abs(float(z.std()) - 1.0) < 0.03, f"tl.randn mean {float(z.mean())} std {float(z.std())}"
assert float(out[2 * n]) == float(u[0]), "tl.rand of a scalar offset differs from the block's"
