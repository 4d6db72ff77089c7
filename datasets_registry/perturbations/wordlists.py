"""Word lists written for Evalboard's perturbations (not copied from AugLy, HELM or others).

Everything here is lower case; the perturbations restore the case of the text they edit.
The lists are deliberately short and conservative: a word that is often not gendered
("guy" in "you guys", "host" of a website, "miss" the verb, "count" the number) or often
not a name ("Will", "Mark", "Madison" the city) is left out, because a wrong swap changes
an example's meaning and would then be counted against the model.
"""

from __future__ import annotations

__all__ = [
    "ADDRESS_TERMS",
    "CONTRACTIONS",
    "ENTITY_FOLLOWERS",
    "ENTITY_OPENERS",
    "FUNCTION_WORDS",
    "GENDER_SWAPS",
    "HONORIFICS",
    "NAME_LEADERS",
    "NOT_NAMES",
    "POSSESSIVE_BRANDS",
    "ROYAL_TITLES",
]

# Gendered words as (masculine, feminine) pairs; each swaps both ways. Pronouns "her",
# "his", "hers" and "him" are not here: they need the next word to choose (fairness.py).
_PAIRS: tuple[tuple[str, str], ...] = (
    ("he", "she"),
    ("himself", "herself"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("dad", "mom"),
    ("dads", "moms"),
    ("daddy", "mommy"),
    ("papa", "mama"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("boyfriend", "girlfriend"),
    ("boyfriends", "girlfriends"),
    ("uncle", "aunt"),
    ("uncles", "aunts"),
    ("nephew", "niece"),
    ("nephews", "nieces"),
    ("grandfather", "grandmother"),
    ("grandfathers", "grandmothers"),
    ("grandpa", "grandma"),
    ("grandson", "granddaughter"),
    ("grandsons", "granddaughters"),
    ("stepfather", "stepmother"),
    ("stepson", "stepdaughter"),
    ("godfather", "godmother"),
    ("fatherhood", "motherhood"),
    ("brotherhood", "sisterhood"),
    ("boyhood", "girlhood"),
    ("manhood", "womanhood"),
    ("king", "queen"),
    ("kings", "queens"),
    ("prince", "princess"),
    ("princes", "princesses"),
    ("duke", "duchess"),
    ("emperor", "empress"),
    ("sir", "madam"),
    ("mr", "ms"),
    ("actor", "actress"),
    ("actors", "actresses"),
    ("waiter", "waitress"),
    ("waiters", "waitresses"),
    ("hero", "heroine"),
    ("heroes", "heroines"),
    ("groom", "bride"),
    ("grooms", "brides"),
    ("widower", "widow"),
    ("fiance", "fiancee"),
    ("monk", "nun"),
    ("monks", "nuns"),
    ("lad", "lass"),
    ("lads", "lasses"),
    ("schoolboy", "schoolgirl"),
    ("schoolboys", "schoolgirls"),
    ("businessman", "businesswoman"),
    ("businessmen", "businesswomen"),
    ("chairman", "chairwoman"),
    ("spokesman", "spokeswoman"),
    ("salesman", "saleswoman"),
    ("salesmen", "saleswomen"),
    ("policeman", "policewoman"),
    ("policemen", "policewomen"),
    ("congressman", "congresswoman"),
    ("sportsman", "sportswoman"),
    ("male", "female"),
    ("males", "females"),
    ("masculine", "feminine"),
    ("patriarch", "matriarch"),
    ("paternal", "maternal"),
)

# Words whose swap only goes one way: the reverse would be ambiguous or wrong.
_ONE_WAY: dict[str, str] = {
    "him": "her",
    "hers": "his",
    "mrs": "mr",
    "ma'am": "sir",
    "ma’am": "sir",
    "mum": "dad",
    "mums": "dads",
    "lord": "lady",
    "hostess": "host",
    "hostesses": "hosts",
    "dame": "sir",
}

GENDER_SWAPS: dict[str, str] = {
    **{m: f for m, f in _PAIRS},
    **{f: m for m, f in _PAIRS},
    **_ONE_WAY,
}
"""Lower-case gendered word -> its counterpart (her/his need context: see fairness.py)."""

ADDRESS_TERMS: frozenset[str] = frozenset(
    "mr mrs ms miss sir madam ma'am ma’am dame mom dad mum mommy daddy mama papa grandma "
    "grandpa uncle aunt".split()
)
"""Gendered words used as titles or names ("Mom", "Uncle Bob"), swapped even capitalised.

Other capitalised gendered nouns mid-sentence are usually part of a name ("Burger King",
"Stephen King", "Iron Man", "Warner Brothers") and are left alone.
"""

ROYAL_TITLES: frozenset[str] = frozenset(
    "king queen prince princess duke duchess lord lady emperor empress".split()
)
"""Gendered titles swapped before a name ("King Charles"), not before a place."""

HONORIFICS: frozenset[str] = frozenset(
    {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "mister", "lord", "lady"}
)
"""Titles after which a lone capitalised word is a surname, not a first name."""

FUNCTION_WORDS: frozenset[str] = frozenset(
    # prepositions and particles
    "about above across after against along among around at before behind below beneath "
    "beside besides between beyond by despite down during except for from in inside into "
    "like near of off on onto out outside over past since through throughout till to "
    "toward towards under until up upon with within without "
    # conjunctions
    "and but or nor so yet because if though although while when whenever where wherever "
    "whether than that as once unless why how "
    # determiners and pronouns
    "a an the this these those some any every each no another all both either neither "
    "i me you he him she her it we us they them my your our their its myself yourself "
    "himself herself itself ourselves themselves who whom whose which what "
    # auxiliaries and modals
    "am is are was were be been being have has had do does did will would shall should "
    "can could may might must "
    # adverbs that follow an object
    "not never always just also too again back away home here there now then today "
    "tonight tomorrow yesterday later soon already still ever enough instead anyway "
    "anymore either "
    # bare verbs after "let her", "made her", "saw her"
    "go come know feel think cry leave stay sit wait try say tell speak sleep eat see "
    "get".split()
)
"""Words that, right after "her" or "his", show it is an object or stands alone.

"told her that" -> "told him that"; "her car" -> "his car" (the next word is not here).
"""

NOT_NAMES: frozenset[str] = frozenset(
    # first names that are also common English words
    "will bill mark may june april august grant faith hope joy rose art frank sunny chance "
    "dean guy pat sue rich ray drew gene miles hunter summer autumn dawn amber "
    "crystal ruby pearl iris lily daisy ivy holly page brook rock sky star major king "
    "prince princess queen duke earl baron justice honor glory harmony melody destiny "
    "trinity heaven angel precious sage river storm rain ocean royal diamond jewel ginger "
    "candy cherry olive hazel violet heather jasmine willow forest jade pepper penny "
    "lane will grace mercy patience charity constance prudence victory sterling lucky "
    "buddy sonny junior cash chase cole reed wade carter cooper mason taylor hunter "
    "fisher baker porter parker walker spencer tucker sawyer miller archer bishop "
    "marshall deacon pierce lance ward clay dale glen glenn rod cliff gray grey wren "
    "birdie robin jay kit tanner cannon colt gunner ace ranger "
    "an as be by do go he if in is it me my no of on or so to up us we ok "
    # first names that are also places or brands common in reviews and news
    "madison savannah jackson austin dallas houston denver phoenix orlando charlotte "
    "georgia virginia carolina florence sydney paris chelsea victoria lincoln washington "
    "jordan israel india asia africa china kenya regina aurora brooklyn camden troy "
    "eugene tyler augusta beverly shelby fremont stanford mercedes porsche tesla toyota "
    "chevy lexus alexa siri cortana wendy denny arby lee earl marriott hilton hyatt "
    "hudson kendall logan raleigh tracy montana dakota cheyenne sierra nevada "
    "santiago salvador dolores guadalupe asuncion trinidad lourdes mesa "
    # first names that are more often a surname, a place, a faith or a word here
    "said christian jesus christ krishna forum fella alma margarita alfredo brandy harsh "
    "panini patty rim ria clinton franklin harrison preston dalton quincy alexandria "
    "morgan douglas warren perry gordon ross mitchell cameron russell wayne allen "
    # months and days that appear in name lists
    "january february march october november december monday friday sunday".split()
)
"""Capitalised words that look like first names but usually are not, kept as they are."""

POSSESSIVE_BRANDS: frozenset[str] = frozenset(
    "wendy denny arby carl macy kohl dillard chili joe jimmy papa ruth applebee "
    "hardee culver zaxby raising dave".split()
)
"""Names that, followed by "'s", usually name a shop or chain (Wendy's, Trader Joe's)."""

ENTITY_FOLLOWERS: frozenset[str] = frozenset(
    "street st avenue ave road rd boulevard blvd drive lane way park county city hall "
    "hotel inn motel bank inc co corp company group university college school academy "
    "airport air airlines station bridge square center centre mall plaza market cafe "
    "grill bar pub restaurant kitchen bakery diner tavern chapel church hospital clinic "
    "island lake river mountain valley beach bay creek heights springs falls institute "
    "foundation museum theater theatre stadium arena library club house".split()
)
"""Capitalised words that, right after a name, show it is part of a place or business."""

ENTITY_OPENERS: frozenset[str] = frozenset(
    "st saint san santa mount mt lake fort port cape new north south east west el la "
    "los las de del van von le".split()
)
"""Words that, right before a name, make it part of a place ("Santa Monica")."""

NAME_LEADERS: frozenset[str] = frozenset(
    "i hi hey hello dear thanks thank bye congrats ask call tell told met meet saw see "
    "uncle aunt auntie cousin brother sister grandpa grandma coach chef officer captain "
    "doctor nurse and or with".split()
)
"""Capitalised words that may stand right before a first name mid-sentence ("Hi John")."""

# Contractions written for the project: (expanded, contracted). Expanding uses the first
# expansion listed for a contraction; ambiguous ones ('s, 'd) get the reading that is
# right more often, and "'s been" reads as "has" (fairness.py has nothing to do with it).
CONTRACTIONS: tuple[tuple[str, str], ...] = (
    ("do not", "don't"),
    ("does not", "doesn't"),
    ("did not", "didn't"),
    ("is not", "isn't"),
    ("are not", "aren't"),
    ("was not", "wasn't"),
    ("were not", "weren't"),
    ("have not", "haven't"),
    ("has not", "hasn't"),
    ("had not", "hadn't"),
    ("will not", "won't"),
    ("would not", "wouldn't"),
    ("could not", "couldn't"),
    ("should not", "shouldn't"),
    ("cannot", "can't"),
    ("can not", "can't"),
    ("must not", "mustn't"),
    ("i am", "i'm"),
    ("i have", "i've"),
    ("i will", "i'll"),
    ("i would", "i'd"),
    ("you are", "you're"),
    ("you have", "you've"),
    ("you will", "you'll"),
    ("you would", "you'd"),
    ("we are", "we're"),
    ("we have", "we've"),
    ("we will", "we'll"),
    ("they are", "they're"),
    ("they have", "they've"),
    ("they will", "they'll"),
    ("it is", "it's"),
    ("it will", "it'll"),
    ("he is", "he's"),
    ("he will", "he'll"),
    ("she is", "she's"),
    ("she will", "she'll"),
    ("that is", "that's"),
    ("there is", "there's"),
    ("what is", "what's"),
    ("who is", "who's"),
    ("here is", "here's"),
    ("where is", "where's"),
    ("let us", "let's"),
)
