//! Retrieval strategies (walk, single, roam, toc, docs, actions) over traits only: never links candle or reqwest. Empty until the strategy API lands.
