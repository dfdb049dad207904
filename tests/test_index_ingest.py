"""Loading, chunking and incremental indexing (a deterministic fake embedder: no model load)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from tools.index.bm25 import tokenize
from tools.index.chunking import MAX_WORDS, chunk_blocks, chunk_documents
from tools.index.documents import Block, Document
from tools.index.ingest import index_paths
from tools.index.loaders import discover, load_file, markdown_blocks, pdf_blocks, text_blocks
from tools.index.search_files import bm25_path, load_vectors
from tools.index.store import IndexStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "docs"


class HashEmbedder:
    """Bag-of-words vectors from hashed tokens: deterministic, instant, and it counts its work."""

    name = "hash"
    dimensions = 384

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts, *, threads=None, on_batch=None):  # noqa: ANN001, ANN201 - test double
        self.texts.extend(texts)
        matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                matrix[row, int(hashlib.md5(token.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        if on_batch:
            on_batch(len(texts))
        return matrix

    def encode_query(self, text: str):  # noqa: ANN201 - test double
        return self.encode([text])[0]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the fixture corpus (tests edit it)."""
    target = tmp_path / "docs"
    shutil.copytree(FIXTURES, target)
    return target


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF: one page per item of ``pages``, each line drawn in Helvetica 12.

    Objects: 1 catalog, 2 page tree, 3 font, then a page and its content stream per page, then
    the optional info dictionary; the xref table holds the real byte offsets.
    """
    page_ids = [4 + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{n} 0 R" for n in page_ids)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for page_id, lines in zip(page_ids, pages, strict=True):
        stream = "\n".join(
            f"BT /F1 12 Tf 72 {720 - 16 * row} Td ({_pdf_escape(line)}) Tj ET"
            for row, line in enumerate(lines)
        ).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    info = ""
    if title is not None:
        objects.append(f"<< /Title ({_pdf_escape(title)}) /Producer (aisearch tests) >>".encode("latin-1"))
        info = f" /Info {len(objects)} 0 R"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


# Two pages of more than 50 words each, so that each page becomes its own passage.
PAGE_ONE = [
    "Quillwort Survey of the Northern Marshes",
    "The quillwort grows in shallow acidic water along the northern marsh edges and the lake shore.",
    "Surveyors counted rosettes in each transect during late summer when the water is lowest and",
    "clearest, and they noted the depth, the bottom sediment and the colour of every rosette found.",
]
PAGE_TWO = [
    "Results",
    "Rosette density peaked near the peat banks where the sediment stays soft and rich in iron.",
    "Beavers flooded two transects in spring, which drowned the smallest plants and moved the",
    "sediment; the survey team marked both transects for a repeat count in the following summer.",
]


@pytest.fixture
def pdf_file(tmp_path: Path) -> Path:
    """A two-page PDF with a metadata title."""
    path = tmp_path / "pdfs" / "survey.pdf"
    path.parent.mkdir()
    path.write_bytes(make_pdf([PAGE_ONE, PAGE_TWO], title="Marsh Quillwort Survey 2024"))
    return path


def _titles(store: IndexStore, name: str = "docs") -> list[str]:
    metadatas = store.collection(name).chroma().get(include=["metadatas"])["metadatas"]
    return sorted(m["title"] for m in metadatas)


# -- loaders -------------------------------------------------------------------------------------
def test_markdown_front_matter_sections_code_and_links() -> None:
    [doc] = load_file(FIXTURES / "astronomy" / "varnis.md")
    assert doc.title == "The Moons of Varnis" and doc.kind == "markdown"
    sections = [b.section for b in doc.blocks]
    assert sections[0] == "Moons of Varnis" and "Pheru" in sections and "Tel and Osk" in sections
    code = next(b.text for b in doc.blocks if b.text.startswith("```"))
    assert '\nperiods = {"Tel": 1.9' in code  # a fenced block keeps its lines
    assert any("See the survey for details." in b.text for b in doc.blocks)  # link syntax stripped
    title, blocks = markdown_blocks("Setext title\n============\n\nBody text.\n\n---\n\nMore.")
    assert title == "Setext title" and [b.text for b in blocks] == ["Body text.", "More."]


def test_text_with_underlined_headings() -> None:
    [doc] = load_file(FIXTURES / "kitchen" / "sourdough.txt")
    assert doc.title == "Sourdough Starter"
    assert [b.section for b in doc.blocks] == ["Sourdough Starter", "Feeding", "Storage"]
    title, blocks = text_blocks("no heading here\njust text\n\nsecond paragraph")
    assert title == "" and [b.text for b in blocks] == ["no heading here just text", "second paragraph"]


def test_html_skips_scripts_navigation_and_footer() -> None:
    [doc] = load_file(FIXTURES / "history" / "lighthouse.html")
    text = " ".join(b.text for b in doc.blocks)
    assert doc.title == "The Harrow Point Lighthouse"
    assert "Miriam Calloway" in text and "22 nautical miles" in text
    assert "console.log" not in text and "Home | History" not in text and "Copyright" not in text
    assert {b.section for b in doc.blocks} >= {"Construction", "The light"}


def test_jsonl_records_with_title_url_and_key(caplog: pytest.LogCaptureFixture) -> None:
    docs = load_file(FIXTURES / "encyclopedia.jsonl")
    assert [d.title for d in docs] == [
        "Kestrel Bridge",
        "Glass frogs",
        "River Ome",
    ]  # bad + empty lines skipped
    assert docs[0].url == "https://example.org/wiki/Kestrel_Bridge" and docs[0].key == "kestrel"
    assert "not JSON" in caplog.text


def test_minimal_pdf_helper_is_well_formed(caplog: pytest.LogCaptureFixture) -> None:
    from pypdf import PdfReader

    with caplog.at_level(logging.WARNING):
        reader = PdfReader(io.BytesIO(make_pdf([PAGE_ONE, PAGE_TWO], title="T")), strict=True)
        assert len(reader.pages) == 2 and reader.metadata.title == "T"
    assert not caplog.records  # no xref repair: the offsets are right


def test_pdf_title_and_one_section_per_page(pdf_file: Path) -> None:
    [doc] = load_file(pdf_file)
    assert doc.title == "Marsh Quillwort Survey 2024" and doc.kind == "pdf" and doc.source == str(pdf_file)
    assert {b.section for b in doc.blocks} == {"page 1", "page 2"}
    page_one = " ".join(b.text for b in doc.blocks if b.section == "page 1")
    page_two = " ".join(b.text for b in doc.blocks if b.section == "page 2")
    assert "shallow acidic water" in page_one and "colour of every rosette found" in page_one
    assert "Beavers flooded two transects" in page_two and "Quillwort" not in page_two
    passages = chunk_documents([doc])
    assert [p.section for p in passages] == ["page 1", "page 2"]  # pages of 50+ words stay apart


def test_pdf_title_falls_back_to_first_line_then_stem(tmp_path: Path) -> None:
    (tmp_path / "untitled.pdf").write_bytes(make_pdf([["", "  Field Notes  ", "more text"], ["two"]]))
    [doc] = load_file(tmp_path / "untitled.pdf")
    assert doc.title == "Field Notes" and [b.text for b in doc.blocks] == ["Field Notes more text", "two"]
    (tmp_path / "blank.pdf").write_bytes(make_pdf([[]], title=""))
    [doc] = load_file(tmp_path / "blank.pdf")
    assert doc.title == "blank" and doc.blocks == []


def test_pdf_blocks_split_paragraphs_and_join_hyphenated_words() -> None:
    blocks = pdf_blocks(["First para-\ngraph line\nnext line\n\nSecond one", "", "Self-\nAware"])
    assert blocks == [
        Block("First paragraph line next line", "page 1"),
        Block("Second one", "page 1"),
        Block("Self- Aware", "page 3"),
    ]


def test_corrupt_and_encrypted_pdfs_raise_errors_naming_the_file(tmp_path: Path) -> None:
    from pypdf import PdfWriter

    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"\x00garbage, not a PDF at all\xff" * 20)
    with pytest.raises(ValueError, match="broken.pdf: not a readable PDF"):
        load_file(broken)
    writer = PdfWriter(clone_from=io.BytesIO(make_pdf([PAGE_ONE])))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as handle:
        writer.write(handle)
    with pytest.raises(ValueError, match="locked.pdf: the PDF is encrypted"):
        load_file(locked)


def test_discover_skips_hidden_and_unsupported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "notes.md").write_text("# hidden")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "a.md").write_text("# A")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.HTML").write_text("<p>b</p>")
    (tmp_path / "sub" / "c.PDF").write_bytes(make_pdf([["c"]]))
    assert [p.name for p in discover([tmp_path])] == ["a.md", "b.HTML", "c.PDF"]
    with pytest.raises(FileNotFoundError):
        discover([tmp_path / "missing"])


# -- chunking ------------------------------------------------------------------------------------
def test_chunks_are_bounded_paragraph_aware_and_stable() -> None:
    long_paragraph = " ".join(f"Sentence number {i} talks about compost and soil." for i in range(80))
    blocks = [Block("Intro words here.", "A"), Block(long_paragraph, "A"), Block("Closing remark.", "B")]
    chunks = chunk_blocks(blocks)
    assert all(len(text.split()) <= MAX_WORDS for _, text in chunks)
    assert len(chunks) >= 3 and chunks[0][0] == "A"
    assert all(text.rstrip().endswith((".", "Closing remark.")) for _, text in chunks)  # cut at sentences

    doc = Document(title="T", source="/x/t.md", blocks=blocks)
    first, again = chunk_documents([doc]), chunk_documents([doc])
    assert [p.id for p in first] == [p.id for p in again]
    assert [p.position for p in first] == list(range(len(first)))
    changed = Document(title="T", source="/x/t.md", blocks=[Block("Intro words changed.", "A"), *blocks[1:]])
    assert chunk_documents([changed])[0].id != first[0].id
    assert chunk_documents([changed])[-1].id == first[-1].id  # other passages keep their ids


def test_small_sections_merge_with_their_headings() -> None:
    blocks = [Block("Alpha text.", "One"), Block("Beta text.", "Two"), Block("Gamma text.", "Three")]
    [(section, text)] = chunk_blocks(blocks)
    assert section == "One" and text == "Alpha text.\n\nTwo\n\nBeta text.\n\nThree\n\nGamma text."


def test_identical_passages_are_kept_once() -> None:
    doc = Document(title="Same", source="/a", blocks=[Block("x " * 100, "s"), Block("y " * 200, "t")])
    twin = Document(title="Same", source="/b", blocks=[Block("x " * 100, "s"), Block("y " * 200, "t")])
    assert len(chunk_documents([doc, twin])) == len(chunk_documents([doc]))


# -- incremental indexing ------------------------------------------------------------------------
def test_incremental_reindex_modify_delete_and_ids_stable(corpus: Path, tmp_path: Path) -> None:
    store, embedder = IndexStore(tmp_path / "index"), HashEmbedder()
    first = index_paths([corpus], store=store, embedder=embedder)
    assert (first.sources, first.changed, first.passages_total) == (6, 6, 12)
    assert first.embedded == 12 and store.collection("docs").chroma().count() == 12
    state = store.collection("docs").state()
    assert state["status"] == "ready" and state["passages"] == 12 and state["generation"] == 1

    embedder.texts.clear()
    again = index_paths([corpus], store=store, embedder=embedder)
    assert (again.changed, again.unchanged, again.embedded, again.generation) == (0, 6, 0, 1)
    assert embedder.texts == []  # unchanged files do no work

    other = IndexStore(tmp_path / "other")  # a different index of the same files: the same ids
    index_paths([corpus], store=other, embedder=HashEmbedder())
    assert set(other.collection("docs").all_ids()) == set(store.collection("docs").all_ids())

    compost = corpus / "garden" / "compost.md"
    compost.write_text(compost.read_text().replace("dark, crumbly", "dark, sweet, crumbly"))
    (corpus / "history" / "lighthouse.html").unlink()
    embedder.texts.clear()
    third = index_paths([corpus], store=store, embedder=embedder)
    assert (third.changed, third.removed, third.embedded) == (1, 1, 1)  # only the edited passage
    assert "dark, sweet, crumbly" in embedder.texts[0]
    assert third.passages_total == 11 and store.collection("docs").chroma().count() == 11
    assert "The Harrow Point Lighthouse" not in _titles(store)
    bm25 = json.loads(bm25_path(store.collection("docs").dir).read_text())
    assert set(bm25["ids"]) == set(store.collection("docs").all_ids()) and bm25["generation"] == 2
    manifest = json.loads(store.collection("docs").manifest_path.read_text())
    assert not any(key.endswith("lighthouse.html") for key in manifest["sources"])
    generation, ids, matrix = load_vectors(store.collection("docs").dir)  # the exact-search matrix follows
    chroma_ids, chroma_matrix = store.collection("docs").vectors_from_chroma()
    assert generation == 2 and set(ids) == set(chroma_ids)
    rows = {pid: row for pid, row in zip(chroma_ids, chroma_matrix, strict=True)}
    assert all(np.allclose(matrix[i], rows[pid], atol=1e-6) for i, pid in enumerate(ids))


def test_files_indexed_from_another_folder_stay(corpus: Path, tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.txt").write_text("Zebras\n======\n\nZebras have black and white stripes.")
    index_paths([corpus], store=store, embedder=HashEmbedder())
    report = index_paths([extra], store=store, embedder=HashEmbedder())
    assert (report.removed, report.passages_total) == (0, 13)
    (extra / "note.txt").unlink()
    assert index_paths([extra], store=store, embedder=HashEmbedder()).passages_total == 12


def test_duplicates_are_stored_once_and_restored_when_the_original_goes(corpus: Path, tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    shutil.copy(corpus / "kitchen" / "sourdough.txt", corpus / "kitchen" / "sourdough-copy.txt")
    report = index_paths([corpus], store=store, embedder=HashEmbedder())
    assert report.duplicates_skipped == 2 and report.passages_total == 12
    (corpus / "kitchen" / "sourdough.txt").unlink()
    report = index_paths([corpus], store=store, embedder=HashEmbedder())
    assert report.passages_total == 12 and _titles(store).count("Sourdough Starter") == 2
    sources = {m["source"] for m in store.collection("docs").chroma().get(include=["metadatas"])["metadatas"]}
    assert str(corpus / "kitchen" / "sourdough-copy.txt") in sources


def test_interrupted_run_is_repaired(corpus: Path, tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    index_paths([corpus], store=store, embedder=HashEmbedder())
    collection = store.collection("docs")
    orphan = chunk_documents([Document("Orphan", "/gone.md", [Block("left behind by a crash")])])
    collection.add(orphan, HashEmbedder().encode(["left behind by a crash"]))
    collection.write_state(status="building")  # as if the process died mid-run
    report = index_paths([corpus], store=store, embedder=HashEmbedder())
    assert report.passages_total == 12 and collection.chroma().count() == 12
    assert collection.state()["status"] == "ready"


def test_empty_folder_creates_an_empty_collection(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    (tmp_path / "empty").mkdir()
    report = index_paths([tmp_path / "empty"], "empty", store=store, embedder=HashEmbedder())
    assert report.passages_total == 0 and store.names() == ["empty"]


def test_pdfs_are_indexed_and_a_corrupt_one_is_reported(
    pdf_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = pdf_file.parent
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 4)
    (folder / "note.txt").write_text("Zebras\n======\n\nZebras have black and white stripes.")
    store = IndexStore(tmp_path / "index")
    with caplog.at_level(logging.WARNING, logger="tools.index.ingest"):
        report = index_paths([folder], store=store, embedder=HashEmbedder())
    assert report.sources == 3 and report.passages_total == 3
    [failure] = report.failed
    assert failure.startswith(str(folder / "broken.pdf")) and "not a readable PDF" in failure
    assert "skipped" in caplog.text and "broken.pdf" in caplog.text
    got = store.collection("docs").chroma().get(include=["documents", "metadatas"])
    by_title: dict[str, list[str]] = {}
    for text, meta in zip(got["documents"], got["metadatas"], strict=True):
        by_title.setdefault(meta["title"], []).append(text)
        assert meta["kind"] in {"pdf", "text"}
    assert sorted(by_title) == ["Marsh Quillwort Survey 2024", "Zebras"]  # the other file still indexed
    pdf_text = " ".join(by_title["Marsh Quillwort Survey 2024"])
    assert "shallow acidic water" in pdf_text and "Beavers flooded two transects" in pdf_text
    sections = {m["section"] for m in got["metadatas"] if m["kind"] == "pdf"}
    assert sections == {"page 1", "page 2"}

    ids = set(store.collection("docs").all_ids())
    other = IndexStore(tmp_path / "other")  # a second, independent run: the same passage ids
    again = index_paths([folder], store=other, embedder=HashEmbedder())
    assert set(other.collection("docs").all_ids()) == ids and len(again.failed) == 1
    embedder = HashEmbedder()
    rerun = index_paths([folder], store=store, embedder=embedder)  # unchanged files: no work
    assert rerun.embedded == 0 and embedder.texts == [] and set(store.collection("docs").all_ids()) == ids


def test_whole_collection_reads_are_paged_and_a_first_build_needs_none(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100k-passage build once died reading every row in one chromadb call ("too many SQL
    variables"); whole-collection reads now go a page at a time."""
    store = IndexStore(tmp_path / "index")
    monkeypatch.setattr("tools.index.store.READ_PAGE", 3)
    reads: list[int | None] = []
    collection = store.collection("docs")
    real_get = type(collection.chroma()).get

    def counting_get(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - spy
        if "ids" not in kwargs:
            reads.append(kwargs.get("limit"))
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(type(collection.chroma()), "get", counting_get)
    report = index_paths([corpus], store=store, embedder=HashEmbedder())

    assert reads == [], "a first build tokenises what it just added"
    stored = store.collection("docs")
    ids = stored.all_ids()
    assert len(ids) == len(set(ids)) == report.passages_total > 3
    assert reads and set(reads) == {3}, "every whole-collection read is a page"
    token_ids, tokens = stored.tokens_from_chroma()
    assert sorted(token_ids) == sorted(ids) and all(tokens)
    assert [pid for pid, _, _ in stored.titles()] == ids
