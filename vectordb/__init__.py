"""The failure-pattern knowledge base.

`store` (KnowledgeBase, RetrievalQuery, open_knowledge_base), `pattern` (Pattern, the seed files),
`features` (code_features, infer_category) and `embedding` (the offline MiniLM model). Import the submodule
you need: `store` pulls in chromadb and the embedding model, `features` and `pattern` do not.

May import: kernel_medic.tools
"""
