"""The built-in catalogue: the standard datasets' official files (docs/datasets.md §7).

Every size and sha256 here was computed from the exact file (a GitHub file pinned to a commit); a
file whose bytes could not be obtained has `sha256` and `size` None, and `datasets fetch` downloads
it only with `--accept-unverified`, printing the sha256 it computed so that this table can be
completed. `provenance` says where each value comes from. Raw GitHub URLs are pinned to a commit.
`HTTP_ONLY_HOSTS` lists the official hosts that serve plain http only."""

from __future__ import annotations

from catalog.fetching.entries import Entry, parse_entries

HTTP_ONLY_HOSTS = frozenset({"images.cocodataset.org"})

RAW = "https://raw.githubusercontent.com"
FLICKR8K_TEXT = f"{RAW}/siddhantagwl/Image-Caption-Generation/e54a5e83a9bb19cfe10cde932d0207cd79355f8a/Flickr8k_text"
CLIPSCORE = f"{RAW}/jmhessel/clipscore/1036465276513621f77f1c2208d742e4a430781f/checksums"
PINNED = "sha256 and size computed from the file at that commit"
FLICKR8K_LICENCE = "Flickr8k research licence (non-commercial research use); images under their Flickr terms"
FLICKR8K_HOME = "https://hockenmaier.cs.illinois.edu/8k-pictures.html"
FLICKR8K_CITATION = (
    "M. Hodosh, P. Young and J. Hockenmaier (2013). Framing Image Description as a Ranking Task: Data, "
    "Models and Evaluation Metrics. JAIR 47."
)


def _file(name: str, url: str, size: int | None, sha256: str | None, provenance: str, extract=None) -> dict:
    return {"name": name, "url": url, "size": size, "sha256": sha256, "provenance": provenance, "extract": extract}


def _unpinned(name: str, url: str, where: str, extract=None) -> dict:
    return _file(name, url, None, None, f"{where}; size and sha256 not known here (fetch prints them)", extract)


FLICKR8K_TOKENS = _file(
    "Flickr8k.token.txt",
    f"{FLICKR8K_TEXT}/Flickr8k.token.txt",
    3395237,
    "1e1f3a371ba1a1bf742e6930521c037e046b2bf3fcc2390ba8405e0301ed7689",
    f"Flickr8k text archive as copied to siddhantagwl/Image-Caption-Generation@e54a5e8; {PINNED}",
)
FLICKR8K_CHECKSUMS = _file(
    "flickr8k_checksum.txt",
    f"{CLIPSCORE}/flickr8k_checksum.txt",
    629341,
    "7d169699ce934368a9be8f56d533e97f81476e4bb838da3be696d1239c755873",
    f"the image md5s CLIPScore used, jmhessel/clipscore@1036465; {PINNED}",
)
FLICKR8K_IMAGES = {
    "files": [
        _unpinned(
            "Flickr8k_Dataset.zip",
            "https://github.com/jbrownlee/Datasets/releases/download/Flickr8k/Flickr8k_Dataset.zip",
            "the 8,091 Flickr8k images as redistributed in a GitHub release (about 1 GB); each image is "
            "checked against flickr8k_checksum.txt when attached",
            ["*.jpg"],
        )
    ]
}
COCO_ANNOTATIONS = _unpinned(
    "annotations_trainval2014.zip",
    "http://images.cocodataset.org/annotations/annotations_trainval2014.zip",
    "the COCO 2014 train/val annotations, from cocodataset.org/#download (about 240 MB)",
)
COCO_VAL_IMAGES = {
    "files": [
        _unpinned(
            "val2014.zip",
            "http://images.cocodataset.org/zips/val2014.zip",
            "the COCO 2014 validation images, from cocodataset.org/#download (about 6 GB)",
            ["*.jpg"],
        )
    ]
}
KARPATHY_ZIP = _unpinned(
    "caption_datasets.zip",
    "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip",
    "Karpathy's split files, from cs.stanford.edu/people/karpathy/deepimagesent",
)
KARPATHY_CITATION = (
    "A. Karpathy and L. Fei-Fei (2015). Deep Visual-Semantic Alignments for Generating Image Descriptions. CVPR."
)
KARPATHY_CORPORA = {
    "coco": (
        "COCO",
        ("test", "val", "train", "restval"),
        "captions CC BY 4.0 (COCO Consortium); images under their Flickr terms",
    ),
    "flickr30k": ("Flickr30k", ("test", "val", "train"), "Flickr30k terms (non-commercial research use)"),
    "flickr8k": ("Flickr8k", ("test", "val", "train"), FLICKR8K_LICENCE),
}


def _karpathy(corpus: str, split: str) -> dict:
    title, _, licence = KARPATHY_CORPORA[corpus]
    member = f"dataset_{corpus}.json"
    return {
        "name": f"{corpus}-karpathy-{split}",
        "title": f"{title} (Karpathy {split} split)",
        "kind": "benchmark",
        "licence": licence,
        "homepage": "https://cs.stanford.edu/people/karpathy/deepimagesent/",
        "citation": KARPATHY_CITATION,
        "folder": "karpathy",
        "files": [{**KARPATHY_ZIP, "extract": [member, f"*/{member}"]}],
        "import": {"format": "karpathy", "path": f"**/{member}", "split": split, "slug": f"{corpus}-karpathy-{split}"},
        # Karpathy's COCO test, val and restval images are all COCO val2014 images (train: train2014's).
        **({"media": COCO_VAL_IMAGES} if corpus == "coco" and split != "train" else {}),
    }


def _coco_captions(split: str) -> dict:
    member = f"annotations/captions_{split}.json"
    return {
        "name": f"coco-captions-{split}",
        "title": f"COCO Captions {split}",
        "kind": "benchmark",
        "licence": "annotations CC BY 4.0 (COCO Consortium); images under their Flickr terms",
        "homepage": "https://cocodataset.org/#download",
        "citation": "X. Chen et al. (2015). Microsoft COCO Captions: Data Collection and Evaluation Server. arXiv:1504.00325.",
        "folder": "coco-2014",
        "files": [{**COCO_ANNOTATIONS, "extract": [member]}],
        "import": {"format": "coco-captions", "path": member, "slug": f"coco-captions-{split}"},
        **({"media": COCO_VAL_IMAGES} if split == "val2014" else {}),
    }


def _msvd(split: str) -> dict:
    return {
        "name": f"msvd-{split}",
        "title": f"MSVD {split}",
        "kind": "benchmark",
        "licence": "research use (Microsoft Research Video Description corpus); videos under YouTube terms",
        "homepage": "https://www.cs.utexas.edu/users/ml/clamp/videoDescription/",
        "citation": "D. Chen and W. Dolan (2011). Collecting Highly Parallel Data for Paraphrase Evaluation. ACL.",
        "folder": "msvd",
        "files": [
            _unpinned(
                "AllVideoDescriptions.txt",
                "https://www.cs.utexas.edu/users/ml/clamp/videoDescription/AllVideoDescriptions.txt",
                "the English descriptions, from the corpus page at cs.utexas.edu",
            ),
            _file(
                "youtube_mapping.txt",
                f"{RAW}/yaoli/arctic-capgen-vid/8a4ad9145006dcb625df8d68e97653f7ca4e53be/youtube_mapping.txt",
                52455,
                "32dce93ef98a629feb74057fa7317c7e000ba4f98b6c0839088210eb69900ac8",
                f"the clip-to-vid<N> numbering of the standard split, yaoli/arctic-capgen-vid@8a4ad91; {PINNED}",
            ),
        ],
        "import": {"format": "msvd", "path": "AllVideoDescriptions.txt", "split": split, "slug": f"msvd-{split}"},
        "media": MSVD_CLIPS,
    }


MSVD_CLIPS = {
    "files": [
        _unpinned(
            "YouTubeClips.tar",
            "https://www.cs.utexas.edu/users/ml/clamp/videoDescription/YouTubeClips.tar",
            "the 1,970 MSVD clips (.avi), from the corpus page at cs.utexas.edu",
            ["*.avi"],
        )
    ]
}

BUILTIN: list[dict] = [
    {
        "name": "flickr8k-expert",
        "title": "Flickr8k-Expert",
        "kind": "meta-evaluation",
        "licence": FLICKR8K_LICENCE,
        "homepage": FLICKR8K_HOME,
        "citation": FLICKR8K_CITATION,
        "folder": "flickr8k",
        "files": [
            _file(
                "ExpertAnnotations.txt",
                f"{FLICKR8K_TEXT}/ExpertAnnotations.txt",
                346674,
                "56c2b1a9e1a46ba73b8b151abd7c3c8b1676fbacadb559d0c2eb6524b166cf4f",
                f"Flickr8k text archive as copied to siddhantagwl/Image-Caption-Generation@e54a5e8; {PINNED}",
            ),
            FLICKR8K_TOKENS,
            FLICKR8K_CHECKSUMS,
        ],
        "import": {"format": "flickr8k-expert", "path": "ExpertAnnotations.txt", "slug": "flickr8k-expert"},
        "media": FLICKR8K_IMAGES,
    },
    {
        "name": "flickr8k-cf",
        "title": "Flickr8k-CF (CrowdFlower)",
        "kind": "meta-evaluation",
        "licence": FLICKR8K_LICENCE,
        "homepage": FLICKR8K_HOME,
        "citation": FLICKR8K_CITATION,
        "folder": "flickr8k",
        "files": [
            _file(
                "CrowdFlowerAnnotations.txt",
                f"{FLICKR8K_TEXT}/CrowdFlowerAnnotations.txt",
                2918552,
                "72a74aef443df4848fb1f3c23654ee9e0ca5b528198f68e2efedf11b6ca61260",
                f"Flickr8k text archive as copied to siddhantagwl/Image-Caption-Generation@e54a5e8; {PINNED}",
            ),
            FLICKR8K_TOKENS,
            FLICKR8K_CHECKSUMS,
        ],
        "import": {"format": "flickr8k-cf", "path": "CrowdFlowerAnnotations.txt", "slug": "flickr8k-cf"},
        "media": FLICKR8K_IMAGES,
    },
    {
        "name": "pascal50s",
        "title": "Pascal-50S",
        "kind": "meta-evaluation",
        "licence": "research use; images from PASCAL VOC under their Flickr terms",
        "homepage": "https://vrama91.github.io/cider/",
        "citation": "R. Vedantam, C. L. Zitnick and D. Parikh (2015). CIDEr: Consensus-based Image Description Evaluation. CVPR.",
        "files": [
            _file(
                "pascal_50s.json",
                f"{RAW}/hjkim811/EXPERT/74bbef41209fce20551f2d707bc7642400d7eddf/annotations/pascal_50s.json",
                1978561,
                "ce39b0a4021ab5f1add1430580fe24fd3fc58de3d03179a37466eb6ddd63fcdd",
                f"the processed pair file, hjkim811/EXPERT@74bbef4; {PINNED}",
            ),
            _file(
                "pascal50S.mat",
                f"{RAW}/vrama91/cider-matlab/febe63b05723c1fdb4cb47d646a9ca90f33e8c59/data/pascal50S.mat",
                1032911,
                "f927c038104d9579ce89be6b8c1a10415b41ce02519becc28238b6fb75a145ac",
                f"the authors' 50-reference pool, vrama91/cider-matlab@febe63b; {PINNED}",
            ),
            _file(
                "pascal_50s_checksum.txt",
                f"{CLIPSCORE}/pascal_50s_checksum.txt",
                57000,
                "172581a948a1246b5d4b0f37adc25e95cf6e7b9bf4dd70874f0029830148cdc6",
                f"the image md5s CLIPScore used, jmhessel/clipscore@1036465; {PINNED}",
            ),
        ],
        "derive": [
            {
                "step": "pascal50s-references",
                "source": "pascal50S.mat",
                "target": "pascal50S_refs.json",
                "sha256": "f19ba628f38d55b3d0b3676e0f34576cab78e4155cee439fc3b4eb56a4a045c8",
            }
        ],
        "import": {"format": "pascal50s", "path": "pascal_50s.json", "slug": "pascal50s"},
        "notes": "No public archive of the 1,000 PASCAL images is known; attach them with `datasets media attach`.",
    },
    {
        "name": "msvd-eval",
        "title": "MSVD-Eval (G-VEval)",
        "kind": "meta-evaluation",
        "licence": "research use; videos from MSVD under YouTube terms",
        "homepage": "https://github.com/ztangaj/gveval",
        "citation": "T. Tong et al. (2024). G-VEval: A Versatile Metric for Evaluating Image and Video Captions Using GPT-4o.",
        "files": [
            _file(
                "MSVD-Eval.json",
                f"{RAW}/ztangaj/gveval/fee3fd7e758f5395f82c1a9426bec2c227824b59/MSVD-Eval.json",
                531517,
                "7bb99c9b608454f531826ce1254d0f20a1d00753942475d744ef88019bb36621",
                f"ztangaj/gveval@fee3fd7; {PINNED}",
            )
        ],
        "import": {"format": "msvd-eval", "path": "MSVD-Eval.json", "slug": "msvd-eval"},
        "media": MSVD_CLIPS,
    },
    {
        "name": "thumb",
        "title": "THumB 1.0 (MSCOCO)",
        "kind": "meta-evaluation",
        "licence": "none stated (the repository has no licence file; cite the paper); images from MSCOCO under their Flickr terms",
        "homepage": "https://github.com/jungokasai/THumB",
        "citation": "J. Kasai et al. (2022). Transparent Human Evaluation for Image Captioning. NAACL.",
        "files": [
            _file(
                "mscoco_THumB-1.0.jsonl",
                f"{RAW}/jungokasai/THumB/fd099b4f311d9c4fd24e6c58ef0df038ec1615f3/mscoco/mscoco_THumB-1.0.jsonl",
                585297,
                "463ebf947c793a541922ead33eb10a885e77c19e9c7d27cf89e034bfff643efa",
                f"jungokasai/THumB@fd099b4; {PINNED}",
            ),
            _file(
                "mscoco_references.json",
                f"{RAW}/jungokasai/THumB/fd099b4f311d9c4fd24e6c58ef0df038ec1615f3/mscoco/mscoco_references.json",
                136692,
                "897672f1f53ed33a376237c33fabc89ebbd04b40e9ced82691c2e9c9324d8fdf",
                f"jungokasai/THumB@fd099b4; {PINNED}",
            ),
        ],
        "import": {"format": "thumb", "path": "mscoco_THumB-1.0.jsonl", "slug": "thumb"},
        "media": COCO_VAL_IMAGES,
    },
    {
        "name": "polaris-test",
        "title": "Polaris (test split)",
        "kind": "meta-evaluation",
        "licence": "Clear BSD (the Polos repository's licence)",
        "homepage": "https://huggingface.co/datasets/yuwd/Polaris",
        "citation": "Y. Wada et al. (2024). Polos: Multimodal Metric Learning from Human Feedback for Image Captioning. CVPR.",
        "files": [
            _unpinned(
                "polaris_test.csv",
                "https://huggingface.co/datasets/yuwd/Polaris/resolve/92aa4b3587774cf625b72e3b590637fe293aafe6/polaris_test.csv",
                "the test CSV of the authors' Hugging Face dataset (about 11 MB), pinned to revision 92aa4b3",
            )
        ],
        "import": {"format": "polaris", "path": "polaris_test.csv", "split": "test", "slug": "polaris-test"},
        "media": {
            "files": [
                _unpinned(
                    "images.tar.gz",
                    "https://huggingface.co/datasets/yuwd/Polaris/resolve/92aa4b3587774cf625b72e3b590637fe293aafe6/images.tar.gz",
                    "every Polaris image, from the authors' Hugging Face dataset at revision 92aa4b3 (about 7.3 GB)",
                    ["*.jpg", "*.jpeg", "*.png"],
                )
            ]
        },
    },
    *(_coco_captions(split) for split in ("val2014", "train2014")),
    *(_karpathy(corpus, split) for corpus, (_, splits, _) in KARPATHY_CORPORA.items() for split in splits),
    {
        "name": "nocaps-val",
        "title": "nocaps validation",
        "kind": "benchmark",
        "licence": "annotations: see nocaps.org (research use); images from Open Images under their own licences",
        "homepage": "https://nocaps.org/download",
        "citation": "H. Agrawal et al. (2019). nocaps: novel object captioning at scale. ICCV.",
        "files": [
            _unpinned(
                "nocaps_val_4500_captions.json",
                "https://s3.amazonaws.com/nocaps/nocaps_val_4500_captions.json",
                "the validation captions, linked from nocaps.org/download",
            )
        ],
        "import": {"format": "nocaps", "path": "nocaps_val_4500_captions.json", "slug": "nocaps-val"},
    },
    *(_msvd(split) for split in ("test", "val", "train")),
]


def builtin_entries() -> list[Entry]:
    return parse_entries(BUILTIN, where="the built-in catalogue")
