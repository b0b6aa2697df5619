// The contest template: bits/stdc++.h at -O2, STL containers: Dijkstra on
// a generated graph.
#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    int n = 20000;
    vector<vector<pair<int, ll>>> g(n);
    unsigned s = 1;
    for (int i = 0; i < 5 * n; i++) {
        s = s * 1664525u + 1013904223u;
        int u = s % n;
        s = s * 1664525u + 1013904223u;
        int v = s % n;
        g[u].push_back({v, (ll)(s >> 20) % 1000 + 1});
        g[v].push_back({u, (ll)(s >> 20) % 1000 + 1});
    }
    vector<ll> dist(n, LLONG_MAX);
    priority_queue<pair<ll, int>, vector<pair<ll, int>>, greater<>> pq;
    dist[0] = 0;
    pq.push({0, 0});
    while (!pq.empty()) {
        auto [d, u] = pq.top();
        pq.pop();
        if (d != dist[u])
            continue;
        for (auto [v, w] : g[u])
            if (d + w < dist[v])
                pq.push({dist[v] = d + w, v});
    }
    map<ll, int> hist;
    unordered_set<ll> distinct;
    for (ll d : dist) {
        hist[d / 1000]++;
        distinct.insert(d);
    }
    cout << "reachable " << count_if(dist.begin(), dist.end(), [](ll d) { return d != LLONG_MAX; }) << '\n';
    cout << "max " << *max_element(dist.begin(), dist.end()) << ", distinct " << distinct.size() << '\n';
    for (auto [k, c] : hist)
        cout << k << ':' << c << ' ';
    cout << '\n';
    return 0;
}
