"""URLs a site generates without end (session ids, calendars, relative links that nest, soft
404s): the rules that refuse them, and what each site's URL patterns have produced so far, kept
in the process or shared through Redis."""
