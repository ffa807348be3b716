"""Pages that say what another page of their site says: the SimHash of a page's visible text,
and each site's index of the fingerprints seen, kept in the process or shared through Redis."""
