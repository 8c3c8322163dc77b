"""The HTML report's inline stylesheet and its one small script (no network, no libraries).

The page reads fully without the script: collapsibles are `<details>`, the status counts are
links to their sections, and loops with problems start open. The script only adds filtering
by status (clicking a count), a search box, expand/collapse-all and opening the section a link
points into; every control it drives is hidden when scripts are off (`.js-only`).
"""

CSS = """
:root{--pass:#2e7d32;--fail:#c62828;--error:#6a1b1a;--notrun:#a35f00;--ink:#1f2328;
--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--link:#0b57d0}
*{box-sizing:border-box}
html{scroll-padding-top:4.5rem}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--ink);margin:0;
background:#fff}
.page{max-width:1200px;margin:0 auto;padding:0 1.25rem 3rem}
h1{font-size:1.55rem;margin:1.2rem 0 .3rem}
h2{font-size:1.2rem;border-bottom:1px solid var(--line);padding-bottom:.25rem;margin:1.8rem 0 .7rem}
h3{font-size:1.02rem;margin:1.1rem 0 .45rem}
h4{font-size:.95rem;margin:.9rem 0 .35rem;color:var(--muted)}
p{margin:.4rem 0}
a{color:var(--link)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.86em}
.wrap{overflow-wrap:break-word;word-break:normal}
.badge{display:inline-block;min-width:4.4em;text-align:center;padding:.08em .45em;
border-radius:.3em;font-weight:650;font-size:.78rem;color:#fff;white-space:nowrap;
vertical-align:baseline}
.b-passed,.b-pass{background:var(--pass)}.b-failed,.b-fail{background:var(--fail)}
.b-error{background:var(--error)}.b-not_run{background:var(--notrun)}
.verdict{border:1px solid var(--line);border-left:6px solid var(--pass);padding:.7rem 1rem;
margin:.6rem 0 1rem;border-radius:.3rem;background:var(--soft)}
.verdict.v-fail{border-left-color:var(--fail)}.verdict.v-error{border-left-color:var(--error)}
.verdict .headline{font-size:1.08rem;font-weight:650}
.meta{color:var(--muted);font-size:.9rem}
.bar{position:sticky;top:0;z-index:20;background:rgba(255,255,255,.97);
border-bottom:1px solid var(--line);padding:.45rem 0;display:flex;flex-wrap:wrap;gap:.4rem;
align-items:center}
.chip{display:inline-flex;gap:.35rem;align-items:center;border:1px solid var(--line);
border-radius:999px;padding:.18rem .7rem;text-decoration:none;color:var(--ink);
font-size:.88rem;background:#fff;cursor:pointer}
.chip b{font-variant-numeric:tabular-nums}
.chip .dot{width:.65rem;height:.65rem;border-radius:50%;display:inline-block}
.chip.active{outline:2px solid var(--ink);outline-offset:1px}
.chip.zero{opacity:.55}
.bar input[type=search]{flex:1 1 16rem;min-width:12rem;max-width:28rem;padding:.3rem .6rem;
border:1px solid var(--line);border-radius:.3rem;font:inherit}
.bar button{font:inherit;font-size:.85rem;padding:.2rem .6rem;border:1px solid var(--line);
border-radius:.3rem;background:var(--soft);cursor:pointer}
.match-count{color:var(--muted);font-size:.85rem}
.js-only{display:none!important}
.js .js-only{display:revert!important}
.caveat{background:#fff8e1;border-left:4px solid #f0b429;padding:.5rem .9rem;font-size:.9rem}
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:.4rem 0 .8rem;
font-size:.9rem}
th,td{border:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top;
overflow-wrap:break-word}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
ul.blockers,ul.plain{list-style:none;padding:0;margin:.3rem 0}
ul.blockers li{border:1px solid var(--line);border-radius:.3rem;padding:.4rem .6rem;
margin:.3rem 0;overflow-wrap:break-word}
ul.blockers .first{display:block;margin-top:.15rem}
details.loop{border:1px solid var(--line);border-radius:.35rem;margin:.5rem 0;background:#fff}
details.loop>summary{padding:.5rem .7rem;cursor:pointer;display:flex;flex-wrap:wrap;
gap:.5rem;align-items:center;background:var(--soft);border-radius:.35rem}
details.loop[open]>summary{border-bottom:1px solid var(--line);border-radius:.35rem .35rem 0 0}
details.loop>summary .name{font-weight:650;min-width:7rem}
details.loop>summary .counts{color:var(--muted);font-size:.88rem}
.loop-body{padding:.2rem .9rem .8rem}
.classes .ev{display:inline-block;border:1px solid var(--line);border-radius:.25rem;
padding:0 .35rem;margin:0 .2rem .1rem 0;font-size:.78rem;background:#fff}
tr.group th{background:#eef1f4;font-size:.85rem}
td.subject .kind{color:var(--muted);font-size:.82rem;margin-top:.15rem}
ul.findings{list-style:none;margin:0;padding:0}
ul.findings li{padding:.2rem 0;border-bottom:1px dashed #e3e6ea}
ul.findings li:last-child{border-bottom:0}
.code{font-weight:650;color:#8a1c1c}
.sev-warning .code{color:#8a5a00}.sev-note .code{color:#44546a}
.loc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.8rem;
color:var(--link);text-decoration:underline dotted;overflow-wrap:break-word}
.msg{display:block;overflow-wrap:break-word}
pre.msg{white-space:pre;overflow-x:auto;background:var(--soft);border:1px solid var(--line);
padding:.4rem .5rem;margin:.25rem 0;max-width:100%;font-size:.8rem}
details.notes,details.metrics{margin:.25rem 0}
details.notes>summary,details.metrics>summary{cursor:pointer;color:var(--muted);font-size:.85rem}
.reason{color:var(--muted);font-size:.88rem}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,430px),1fr));
gap:1rem;margin:.4rem 0 .8rem}
figure{margin:0;border:1px solid var(--line);border-radius:.3rem;padding:.4rem;min-width:0}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:.8rem;color:var(--muted);overflow-wrap:break-word}
.scroll{max-width:100%;overflow-x:auto}
table.km td,table.km th{padding:.15rem .3rem;text-align:center;font-size:.8rem}
table.km td.op,table.km th.op{text-align:left;width:16rem}
table.km tr.fam th{text-align:left;background:#eef1f4}
.km-k{background:#cfe8d5}.km-o{background:#e6f2d0}.km-s{background:#dcefe0}
.km-bad{background:#f4b6b6;font-weight:700}.km-eq{background:#eee}.km-t{background:#fde8c8}
.km-na{color:#bbb}
.legend-line{font-size:.85rem;color:var(--muted)}
ul.km-key{columns:2 22rem;margin:.3rem 0 .5rem}
details.grouped{margin:.5rem 0}
details.grouped>summary,details.more>summary{cursor:pointer;font-weight:600;font-size:.92rem;
padding:.2rem 0}
.hidden{display:none!important}
"""

# Filtering: every element with class `row` carries data-status; the status chips and the
# search box hide rows that do not match, hide loops left without a visible row, and open the
# rest. Clearing both filters restores each loop's initial open state.
JS = """
(function(){
document.documentElement.classList.add('js');
var state={status:'all',query:''};
var rows=[].slice.call(document.querySelectorAll('.row'));
var loops=[].slice.call(document.querySelectorAll('details.loop'));
// every container of rows: loops, status groups, "and N more" lists; innermost last
var groups=[].slice.call(document.querySelectorAll('.grouped,details')).filter(function(d){
  return d.querySelector('.row');}).reverse();
var chips=[].slice.call(document.querySelectorAll('.chip[data-filter]'));
var count=document.querySelector('.match-count');
var box=document.querySelector('.bar input[type=search]');
rows.forEach(function(r){r._text=r.textContent.toLowerCase();});
function apply(){
  var terms=state.query.toLowerCase().split(/\\s+/).filter(Boolean);
  var active=state.status!=='all'||terms.length>0;
  var shown=0;
  rows.forEach(function(r){
    var ok=(state.status==='all'||r.dataset.status===state.status)&&
      terms.every(function(t){return r._text.indexOf(t)>=0;});
    r.classList.toggle('hidden',!ok);
    if(ok&&r.classList.contains('check'))shown++;
  });
  groups.forEach(function(g){
    var any=g.querySelector('.row:not(.hidden)');
    g.classList.toggle('hidden',active&&!any);
    if(g.tagName==='DETAILS')g.open=active?!!any:g.hasAttribute('data-open');
  });
  document.querySelectorAll('.extra').forEach(function(e){e.classList.toggle('hidden',active);});
  chips.forEach(function(c){
    var on=c.dataset.filter===state.status;c.classList.toggle('active',on);
    c.setAttribute('aria-pressed',on?'true':'false');
  });
  if(count)count.textContent=active?shown+' matching check'+(shown===1?'':'s'):'';
}
chips.forEach(function(c){c.addEventListener('click',function(e){
  e.preventDefault();
  state.status=(state.status===c.dataset.filter)?'all':c.dataset.filter;apply();
});});
if(box)box.addEventListener('input',function(){state.query=box.value;apply();});
document.querySelectorAll('.bar button[data-act]').forEach(function(b){
  b.addEventListener('click',function(){
    var open=b.dataset.act==='expand';
    loops.forEach(function(d){if(!d.classList.contains('hidden'))d.open=open;});
  });
});
function reveal(){
  var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
  var el=document.getElementById(id);if(!el)return;
  for(var p=el.parentElement;p;p=p.parentElement){if(p.tagName==='DETAILS')p.open=true;}
  el.scrollIntoView();
}
window.addEventListener('hashchange',reveal);
document.addEventListener('keydown',function(e){
  if(e.key==='/'&&box&&document.activeElement!==box){e.preventDefault();box.focus();}
});
apply();reveal();
})();
"""
