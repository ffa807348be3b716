"""robots.txt: rules for one user agent (Protego with RFC 9309 corrections), fetch-status
semantics, and the matched rule behind every decision."""
