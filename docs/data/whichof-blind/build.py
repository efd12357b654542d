import json, re
D = {}
for l in open('../shared/data/hotpotqa-100/corpus.jsonl'):
    d = json.loads(l); D[d['id']] = d

# (question, sideA, idA, valA, keyA, sideB, idB, valB, keyB, direction, extra aliases {side: [..]})
# key = sortable number (dates as YYYYMMDD, unknown month/day as 0 -> only used when years differ)
Q = [
 ("Who was born earlier, Raye Birk or Gerald McRaney?", "Raye Birk","hp0006","May 27, 1943",19430527, "Gerald McRaney","hp0327","August 19, 1947",19470819, "earlier", {}),
 ("Which census-designated place on Oahu had the larger population at the 2010 census, Laie or Mākaha?", "Laie","hp0116","6,138",6138, "Mākaha","hp0202","8,278",8278, "larger", {"Laie":["Laie, Hawaii"],"Mākaha":["Mākaha, Hawaii","Makaha"]}),
 ("Which Danish heavy metal band was formed later, Volbeat or Mercyful Fate?", "Volbeat","hp0358","2001",2001, "Mercyful Fate","hp0190","1981",1981, "later", {}),
 ("Which Richard Bach book was first published earlier, Illusions or Jonathan Livingston Seagull?", "Illusions","hp0002","1977",1977, "Jonathan Livingston Seagull","hp0703","1970",1970, "earlier", {"Illusions":["Illusions: The Adventures of a Reluctant Messiah","Illusions (Bach novel)"]}),
 ("Which country has the shorter total border length, Lesotho or Botswana?", "Lesotho","hp0603","909 km",909, "Botswana","hp0602","4347.15 km",4347.15, "smaller", {"Lesotho":["Geography of Lesotho"],"Botswana":["Geography of Botswana"]}),
 ("Who is older, Julia Gillard or Paul Keating?", "Julia Gillard","hp0135","29 September 1961",19610929, "Paul Keating","hp0448","18 January 1944",19440118, "earlier", {}),
 ("Which pizza chain was founded first, Pizza Hut or Little Caesars?", "Pizza Hut","hp0417","1958",1958, "Little Caesars","hp0409","1959",1959, "earlier", {}),
 ("Which KBS2 television series ran for more episodes, Cheer Up! or Lovers of Music?", "Cheer Up!","hp0472","12 episodes",12, "Lovers of Music","hp0977","16 episodes",16, "larger", {"Cheer Up!":["Cheer Up! (TV series)"]}),
 ("Which ski jumper was born later, Simon Ammann or Sven Hannawald?", "Simon Ammann","hp0129","25 June 1981",19810625, "Sven Hannawald","hp0057","9 November 1974",19741109, "later", {}),
 ("Which Disney animated film was released later, Alice in Wonderland or The Aristocats?", "Alice in Wonderland","hp0394","1951",1951, "The Aristocats","hp0633","1970",1970, "later", {"Alice in Wonderland":["Alice in Wonderland (1951 film)"]}),
 ("Which fictional character appeared in fewer episodes, Max Ramsay or Ruth Martin?", "Max Ramsay","hp0487","190 episodes",190, "Ruth Martin","hp0825","208 episodes",208, "smaller", {"Ruth Martin":["Ruth Martin (Lassie)"]}),
 ("Which brewer was founded earlier, the Boston Beer Company or the Bass Brewery?", "the Boston Beer Company","hp0786","1984",1984, "the Bass Brewery","hp0879","1777",1777, "earlier", {"the Boston Beer Company":["Boston Beer Company"],"the Bass Brewery":["Bass Brewery","Bass"]}),
 ("Who was born later, Nigella Lawson or John Diamond?", "Nigella Lawson","hp0471","6 January 1960",19600106, "John Diamond","hp0230","10 May 1953",19530510, "later", {"John Diamond":["John Diamond (journalist)"]}),
 ("Which Portuguese city has the smaller population, Lisbon or Funchal?", "Lisbon","hp0510","552,700",552700, "Funchal","hp0236","111,892",111892, "smaller", {}),
 ("Which school was established later, the Cutler School of New York or Hebron Academy?", "the Cutler School of New York","hp0913","1876",1876, "Hebron Academy","hp0917","1804",1804, "later", {"the Cutler School of New York":["Cutler School (New York City)","Cutler School","The Cutler School of New York"]}),
 ("Which Iain Banks novel was published earlier, Transition or Whit?", "Transition","hp0533","2009",2009, "Whit","hp0188","1995",1995, "earlier", {"Transition":["Transition (novel)"],"Whit":["Whit (novel)","Whit, or, Isis amongst the unsaved"]}),
 ("Which country has the larger total area, Ethiopia or Zambia?", "Ethiopia","hp0032","1,100,000 km2",1100000, "Zambia","hp0361","752 618 square kilometres",752618, "larger", {"Zambia":["Geography of Zambia"]}),
 ("Which actor was born first, Mark Wahlberg or Tom Sizemore?", "Mark Wahlberg","hp0363","June 5, 1971",19710605, "Tom Sizemore","hp0588","November 29, 1961",19611129, "earlier", {}),
 ("Which publishing house was founded earlier, Onufri Publishing House or Silesian National Publishing House?", "Onufri Publishing House","hp0178","1992",1992, "Silesian National Publishing House","hp0852","2003",2003, "earlier", {"Onufri Publishing House":["Onufri"]}),
 ("Which place in the United States had more residents at the 2010 census, Leland or North Little Rock?", "Leland","hp0474","13,527",13527, "North Little Rock","hp0820","62,304",62304, "larger", {"Leland":["Leland, North Carolina"],"North Little Rock":["North Little Rock, Arkansas"]}),
 ("Which Hexum brother was born later, Nick Hexum or Zack Hexum?", "Nick Hexum","hp0886","April 12, 1970",19700412, "Zack Hexum","hp0144","April 28, 1978",19780428, "later", {}),
 ("Which Disney animated feature film was released later, Big Hero 6 or Frozen?", "Big Hero 6","hp0306","2014",2014, "Frozen","hp0078","2013",2013, "later", {"Big Hero 6":["Big Hero 6 (film)"],"Frozen":["Frozen (2013 film)"]}),
 ("Which airport is closer to the centre of its city, Maputo International Airport or Vancouver International Airport?", "Maputo International Airport","hp0180","3 km",3, "Vancouver International Airport","hp0406","12 km",12, "smaller", {}),
 ("Which band was formed first, The Dandy Warhols or Counting Crows?", "The Dandy Warhols","hp0545","1994",1994, "Counting Crows","hp0216","1991",1991, "earlier", {}),
 ("Which Australian politician is younger, Barnaby Joyce or Warren Truss?", "Barnaby Joyce","hp0749","17 April 1967",19670417, "Warren Truss","hp0698","8 October 1948",19481008, "later", {}),
 ("Who has released fewer studio albums, Mercyful Fate or Nichole Nordeman?", "Mercyful Fate","hp0190","seven studio albums",7, "Nichole Nordeman","hp0826","four studio albums",4, "smaller", {"Nichole Nordeman":["Nichole Nordeman discography","Nordeman"]}),
 ("Which pop group was formed later, the Spice Girls or Twins?", "the Spice Girls","hp0885","1994",1994, "Twins","hp0453","2001",2001, "later", {"the Spice Girls":["Spice Girls"],"Twins":["Twins (group)"]}),
 ("Which Dandy Warhols album was released earlier, ...The Dandy Warhols Come Down or The Dandy Warhols Are Sound?", "...The Dandy Warhols Come Down","hp0353","July 15, 1997",19970715, "The Dandy Warhols Are Sound","hp0497","July 14, 2009",20090714, "earlier", {"...The Dandy Warhols Come Down":["The Dandy Warhols Come Down"]}),
 ("Which had the larger population at the 2011 census, Orléans or Manitoba's Northern Region?", "Orléans","hp0916","107,823",107823, "Manitoba's Northern Region","hp0904","88,146",88146, "larger", {"Orléans":["Orleans, Ontario","Orleans","Orléans, Ontario"]}),
 ("Which author was born earlier, Richard Bach or Richard Wright?", "Richard Bach","hp0964","June 23, 1936",19360623, "Richard Wright","hp0035","September 4, 1908",19080904, "earlier", {"Richard Wright":["Richard Wright (author)","Richard Nathaniel Wright"]}),
 ("Which company was founded later, Zeitgeist Films or Two Dollar Radio?", "Zeitgeist Films","hp0505","1988",1988, "Two Dollar Radio","hp0709","2005",2005, "later", {}),
 ("Which performer appeared in more films, Cecil Parker or Joan Kemp-Welch?", "Cecil Parker","hp0196","91 films",91, "Joan Kemp-Welch","hp0658","fifteen films",15, "larger", {}),
 ("Which cricketer was born later, Nathan Astle or Ben Stokes?", "Nathan Astle","hp0661","15 September 1971",19710915, "Ben Stokes","hp0620","4 June 1991",19910604, "later", {}),
 ("Which Irwin Shaw novel was published first, Lucy Crown or Rich Man, Poor Man?", "Lucy Crown","hp0888","1956",1956, "Rich Man, Poor Man","hp0832","1969",1969, "earlier", {"Rich Man, Poor Man":["Rich Man, Poor Man (novel)"]}),
 ("Of these two towns, one on Oahu and one in New South Wales, which recorded the smaller census population, Kahuku or Young?", "Kahuku","hp0627","2,614",2614, "Young","hp0584","6,960",6960, "smaller", {"Kahuku":["Kahuku, Hawaii"],"Young":["Young, New South Wales"]}),
 ("Which football club was formed earlier, SV St. Georg or Baltimore Orioles F.C.?", "SV St. Georg","hp0051","3 June 1895",18950603, "Baltimore Orioles F.C.","hp0382","1893",1893, "earlier", {"SV St. Georg":["SV St. Georg Hamburg"]}),
 ("Which residential hall houses more students, Sorin Hall or University Hall at the University of Hong Kong?", "Sorin Hall","hp0143","151 undergraduate students",151, "University Hall at the University of Hong Kong","hp0468","about 110 students",110, "larger", {"Sorin Hall":["Sorin Hall (University of Notre Dame)","Sorin College"],"University Hall at the University of Hong Kong":["University Hall (University of Hong Kong)","University Hall","UHall"]}),
 ("Which Counting Crows member is younger, David Bryson or Adam Duritz?", "David Bryson","hp0579","October 5, 1961",19611005, "Adam Duritz","hp0175","August 1, 1964",19640801, "later", {}),
 ("Which residential hall opened later, Salimullah Muslim Hall or Toad Hall?", "Salimullah Muslim Hall","hp0173","11 August 1931",19310811, "Toad Hall","hp0485","1974",1974, "later", {"Toad Hall":["Toad Hall (ANU)"]}),
 ("Which tornado outbreak produced fewer tornadoes, the 1998 Eastern tornado outbreak or the tornado outbreak of February 23–24, 2016?", "the 1998 Eastern tornado outbreak","hp0087","47 tornadoes",47, "the tornado outbreak of February 23–24, 2016","hp0341","61 tornadoes",61, "smaller", {"the 1998 Eastern tornado outbreak":["1998 Eastern tornado outbreak","1998 Eastern Tornado Outbreak"],"the tornado outbreak of February 23–24, 2016":["Tornado outbreak of February 23–24, 2016"]}),
]
assert len(Q) == 40
import random
random.Random(3).shuffle(Q)
def year(k):
    k = int(k); return k // 10000 if k > 9999999 else k
out = []
for i, (q, a, ia, va, ka, b, ib, vb, kb, dirn, al) in enumerate(Q, 1):
    # comparable keys: if one side is year-only, compare years
    if dirn in ("earlier", "later") and (ka < 10000 or kb < 10000):
        ka2, kb2 = year(ka), year(kb)
    else:
        ka2, kb2 = ka, kb
    assert ka2 != kb2, q
    pick_first = (ka2 < kb2) if dirn in ("earlier", "smaller") else (ka2 > kb2)
    ans = a if pick_first else b
    assert q.endswith(f"{a} or {b}?"), q
    for s, pid, v in ((a, ia, va), (b, ib, vb)):
        assert v in D[pid]['text'], (pid, v)
    import html
    aliases = list(al.get(ans, []))
    title = html.unescape(D[ia if pick_first else ib]['title'])
    if title != ans and title not in aliases:
        aliases.append(title)
    out.append({"id": f"wo{i:02d}", "question": q, "answer": ans, "answer_aliases": aliases,
                "supporting_ids": [ia, ib], "kind": "comparison", "level": "medium",
                "values": {a: va, b: vb}, "direction": dirn, "_first": pick_first})
with open('docs/data/whichof-blind/questions.jsonl', 'w') as f:
    for o in out:
        o = {k: v for k, v in o.items() if k != '_first'}
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
print("first-named answers:", sum(o['_first'] for o in out))
print("pattern:", ''.join('F' if o['_first'] else 'S' for o in out))
from collections import Counter
print(Counter(o['direction'] for o in out))
