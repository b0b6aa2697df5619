import copy
import dataclasses
import os
import pickle
import shelve


@dataclasses.dataclass
class Node:
    name: str
    kids: list = dataclasses.field(default_factory=list)


root = Node("root", [Node("a"), Node("b", [Node("c")])])
root.kids[1].kids[0].kids.append(root)
for proto in (0, pickle.HIGHEST_PROTOCOL):
    with open("tree.pkl", "wb") as f:
        pickle.dump(root, f, protocol=proto)
    with open("tree.pkl", "rb") as f:
        back = pickle.load(f)
    print(proto, back.kids[1].kids[0].kids[0] is back, back.kids[0])
dc = copy.deepcopy(root)
print(dc is not root, dc.kids[1].kids[0].kids[0] is dc, copy.copy(root).kids is root.kids)
print(len(pickle.dumps(list(range(1000)), protocol=2)), pickle.loads(pickle.dumps({1, 2, frozenset([3])})))
with shelve.open("store") as s:
    s["k"] = {"v": [1, 2, 3]}
    s["n"] = 7
with shelve.open("store", "r") as s:
    print(sorted(s.keys()), s["k"])
print(any(f.startswith("store") for f in os.listdir(".")))
