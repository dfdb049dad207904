import asyncio, sys, tempfile
from pathlib import Path
sys.path.insert(0,'/work/main')
from tests.support.tool_catalog import BagOfWordsEmbedder
from tools.index.embedder import shared_embedder
from tests.test_refined_retrieval import clock_specs
from tools.catalog.run_catalog import hub_catalog
from tools.catalog.retrieve import ToolRetriever, RetrievalOptions
from tools.catalog.run_index import RunIndex
from tools.hub import ToolHub
from tools.registry import bundled_connections
specs = asyncio.run(clock_specs())
hub = ToolHub({"clock": bundled_connections()["clock"]}, described={"clock": specs}, descriptions={"clock": ""})
rows=[l.rstrip('\n').split('\t') for l in open('/tmp/probe/clockq.txt')]
for dense in (0, 64):
    idx = RunIndex(shared_embedder() if dense else BagOfWordsEmbedder(), root=Path(tempfile.mkdtemp()), max_embed=dense)
    ret = ToolRetriever(idx.build(hub_catalog(hub)).index)
    right=0; wrong=[]
    for gold,q in rows:
        r = ret.search(q, RetrievalOptions(dense=bool(dense)))
        top=r.tools[0].tool
        right += top==gold
        if top!=gold: wrong.append((gold,top,q[:50]))
    print(sys.argv[1], 'dense' if dense else 'bm25', f'{right}/{len(rows)}', wrong)
